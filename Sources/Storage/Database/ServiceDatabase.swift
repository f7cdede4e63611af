import Compression
import Foundation
import Hashing
import GRDB
import ReportModel
import SQLInterface
import SystemCalls

/// The SQLite job queue: reports, jobs and results in one WAL database.
///
/// Every connection waits on `busy_timeout` instead of failing with SQLITE_BUSY, and every
/// write runs in an IMMEDIATE transaction so a reader never has to upgrade to a writer
/// (the one case where SQLite returns BUSY without waiting).
public final class ServiceDatabase: Sendable {
    /// Milliseconds since the Unix epoch; injectable so tests can move time.
    public typealias Clock = @Sendable () -> Int64

    public let path: String
    let pool: DatabasePool
    let clock: Clock

    public static let systemClock: Clock = { Int64(Date().timeIntervalSince1970 * 1000) }

    public init(path: String, busyTimeout: TimeInterval = 30, clock: @escaping Clock = ServiceDatabase.systemClock) throws {
        self.path = path
        self.clock = clock
        let dir = (path as NSString).deletingLastPathComponent
        if !dir.isEmpty {
            do throws(SystemCallError) { try PrivateFiles.makeDirectory(dir) } catch { throw StorageError.cannotCreate(dir, error.reason) }
        }
        var config = Configuration()
        config.busyMode = .timeout(busyTimeout)
        config.prepareDatabase { db in
            // WAL makes NORMAL durable against process crashes; only power loss can drop the last commits.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // Searches compare versions in `VersionOrder`, which SQL's text order is not.
            db.add(function: QuerySQL.versionFunction())
        }
        // Opening is serialized across processes by a file lock: a master and a `submit` often
        // create the database together, and then (a) switching a new file to WAL can fail with
        // SQLITE_BUSY without waiting on busy_timeout, and (b) GRDB's migrator picks the pending
        // migrations before taking the write lock, so both would run "CREATE TABLE".
        pool = try Self.withExclusiveLock(path + "-open.lock") {
            // Owner only: SQLite would make it 0644, and its -wal and -shm copy its mode.
            do throws(SystemCallError) { try PrivateFiles.createFile(path) } catch { throw StorageError.cannotCreate(path, error.reason) }
            try Self.createWithIncrementalVacuum(path)
            let pool = try DatabasePool(path: path, configuration: config)
            if try !pool.read({ try Schema.migrator.hasCompletedMigrations($0) }) {
                try Schema.migrator.migrate(pool)
            }
            return pool
        }
    }

    /// A new database is created with `auto_vacuum = INCREMENTAL`, so `prune` can hand freed
    /// pages back to the file system without rewriting it. The mode must be recorded before
    /// the file turns to WAL (which `DatabasePool` does on open), hence this separate step.
    private static func createWithIncrementalVacuum(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) != 0 || info.st_size == 0 else { return }
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
            try db.execute(sql: "VACUUM")
        }
        try queue.close()
    }

    private static func withExclusiveLock<T>(_ lockPath: String, _ body: () throws -> T) throws -> T {
        let lock: FileLock
        do { lock = try FileLock(exclusive: lockPath) } catch { throw StorageError.lockUnavailable(lockPath, error.reason) }
        defer { lock.release() }
        return try body()
    }

    /// Current time on this database's clock, in milliseconds.
    public func now() -> Int64 { clock() }

    /// A write transaction. GRDB 7 opens write transactions as IMMEDIATE on a writable
    /// connection, which is what keeps SQLITE_BUSY out: the write lock is taken (waiting on
    /// `busy_timeout`) before the first read, never by upgrading a reader.
    func immediate<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.write(body)
    }

    /// The most jobs one claim leases (`SQLJobQueue.maxClaimBatch`).
    public static let maxClaimBatch = SQLJobQueue.maxClaimBatch

    // MARK: Claims

    /// `reports.build_ids` as a list: NULL (stored before v7) and '' both hold none. Only
    /// `BuildID.hex` writes the column; a word that is not one names no build and is passed over
    /// (the ids only steer which worker gets the job).
    static func buildIds(stored: String?) -> [BuildID] {
        guard let stored else { return [] }
        return stored.split(separator: " ").compactMap { try? BuildID($0) }
    }

    // MARK: Queries

    /// Throws unless a write transaction can be taken and committed (`/readyz`): a full disk,
    /// a read-only file or a lock held past `busy_timeout` all fail here.
    public func checkWritable() throws {
        try immediate { db in
            let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
            try db.execute(sql: "PRAGMA user_version = \(version)")
        }
    }

    /// Number of jobs in each state (every state present, zero when empty).
    public func stateCounts() throws -> [JobState: Int] {
        try pool.read { db in
            var counts = Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0, 0) })
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM jobs GROUP BY state") {
                if let state = JobState(rawValue: row["state"]) { counts[state] = row["n"] }
            }
            return counts
        }
    }

    /// The newest job of a report.
    public func jobStatus(reportId: Int64) throws -> JobStatus? {
        try pool.read { db in
            guard let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT j.id, j.report_id, j.state, j.attempts, j.last_error, j.run_after, j.updated_at,
                           r.format, r.kind
                    FROM jobs j JOIN reports r ON r.id = j.report_id
                    WHERE j.report_id = ? ORDER BY j.id DESC LIMIT 1
                    """,
                arguments: [reportId])
            else { return nil }
            return JobStatus(
                jobId: row["id"], reportId: row["report_id"], state: JobState(rawValue: row["state"]) ?? .failed,
                attempts: row["attempts"], lastError: row["last_error"], runAfter: row["run_after"],
                updatedAt: row["updated_at"], format: row["format"], kind: try row.stored("kind"))
        }
    }

    /// States of the newest job of each of `reportIds` (for `submit --wait`).
    public func states(reportIds: [Int64]) throws -> [Int64: JobState] {
        try pool.read { db in
            var states: [Int64: JobState] = [:]
            for chunk in stride(from: 0, to: reportIds.count, by: 500) {
                let ids = Array(reportIds[chunk..<min(chunk + 500, reportIds.count)])
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT report_id, state FROM jobs
                        WHERE id IN (SELECT MAX(id) FROM jobs WHERE report_id IN (\(databaseQuestionMarks(count: ids.count))) GROUP BY report_id)
                        """,
                    arguments: StatementArguments(ids))
                for row in rows { states[row["report_id"]] = JobState(rawValue: row["state"]) }
            }
            return states
        }
    }

    /// A report's stored result, with the debug files its processing lacked (`missing_symbols`).
    public func result(reportId: Int64) throws -> StoredResult? {
        let found: (Row, [MissingDebugFile])? = try pool.read { db in
            guard let row = try Row.fetchOne(
                db,
                sql: "SELECT report_id, symbolicated, symbolicated_size, status, fingerprint FROM results WHERE report_id = ?",
                arguments: [reportId])
            else { return nil }
            // rowid order is the order the result listed them in.
            let missing = try Row.fetchAll(
                db, sql: "SELECT build_id, image_name FROM missing_symbols WHERE report_id = ? ORDER BY rowid",
                arguments: [reportId]
            ).map { row throws(StorageError) in
                MissingDebugFile(buildID: try row.storedBuildID("build_id"), imageName: row["image_name"])
            }
            return (row, missing)
        }
        guard let (row, missing) = found else { return nil }
        let json: Data
        do { json = try Zlib.inflate(row["symbolicated"], limit: max(row["symbolicated_size"], 1)) } catch {
            throw StorageError.corruptStoredResult(reportId: reportId, error.description)
        }
        return StoredResult(
            reportId: row["report_id"], symbolicatedJSON: json, status: try row.stored("status"),
            missingImages: missing, fingerprint: row["fingerprint"])
    }

    public func report(id: Int64) throws -> StoredReport? {
        let row: Row? = try pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT id, format, kind, digest, raw, raw_size, received_at FROM reports WHERE id = ?",
                arguments: [id])
        }
        guard let row else { return nil }
        return StoredReport(
            id: row["id"], format: row["format"], kind: try row.stored("kind"), digest: row["digest"],
            raw: try SQLJobQueue.inflateStored(reportId: id, raw: row["raw"], size: row["raw_size"]), receivedAt: row["received_at"])
    }
}

extension ServiceDatabase: SQLStore {
    public func write<T>(_ body: (SQLExecutor) throws -> T) throws -> T {
        try pool.write { try body(GRDBExecutor($0)) }
    }

    public func read<T>(_ body: (SQLExecutor) throws -> T) throws -> T {
        try pool.read { try body(GRDBExecutor($0)) }
    }
}
