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
}

extension ServiceDatabase: SQLStore {
    public var location: String { path }

    public func write<T>(_ body: (SQLExecutor) throws -> T) throws -> T {
        try pool.write { try body(GRDBExecutor($0)) }
    }

    public func read<T>(_ body: (SQLExecutor) throws -> T) throws -> T {
        try pool.read { try body(GRDBExecutor($0)) }
    }
}
