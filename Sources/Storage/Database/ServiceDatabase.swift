import Compression
import Foundation
import Hashing
import GRDB
import ReportModel
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

    // MARK: Submit

    /// Stores a report and enqueues its job in one transaction; an identical report (same
    /// SHA-256 of the decompressed bytes) in the same namespace, or like it without one, returns
    /// the existing id and adds no job. Another namespace's reports are never looked at: an
    /// upload must not learn that the same bytes, or their id, exist in another tenant's data.
    public func submit(_ report: NewReport) throws -> SubmitOutcome {
        try submit([StorableReport(report)])[0]
    }

    /// Stores several reports in one transaction (the ingest endpoint's group commit), in
    /// order, each deduplicated as `submit(_:)` does, also against the ones before it.
    /// Digests and compression are done by `StorableReport` before the write lock is taken.
    public func submit(_ reports: [StorableReport]) throws -> [SubmitOutcome] {
        try immediate { db in
            try reports.map { try insert($0, db) }
        }
    }

    private func insert(_ storable: StorableReport, _ db: Database) throws -> SubmitOutcome {
        let report = storable.report
        // Cached statements: under ingest load, compiling (and GRDB authorizing) these three
        // statements for every report showed in the writer's profile (scripts/bench-serve.sh).
        // The expression of the `reports_digest` unique index (v9), so the lookup uses it.
        if let existing = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM reports WHERE digest = ? AND ifnull(namespace, '') = ?"),
            arguments: [storable.digest, report.namespace ?? ""])
        {
            return SubmitOutcome(reportId: existing, jobId: nil, duplicate: true)
        }
        let now = clock()
        try db.cachedStatement(
            sql: """
                INSERT INTO reports (raw, raw_size, format, digest, app, version, kind, received_at, namespace, build_ids,
                                     os_version, device_model, device_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [storable.compressed, report.raw.count, report.format, storable.digest, report.app, report.version,
                        report.kind.rawValue, now, report.namespace, report.buildIds?.map(\.hex).joined(separator: " "),
                        report.device?.osVersion, report.device?.model, report.device?.id])
        let reportId = db.lastInsertedRowID
        let state: JobState = report.rejectedBecause == nil ? .queued : .failed
        try db.cachedStatement(
            sql: """
                INSERT INTO jobs (report_id, state, priority, attempts, run_after, last_error, created_at, updated_at)
                VALUES (?, ?, ?, 0, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [reportId, state.rawValue, report.priority, now, report.rejectedBecause, now, now])
        return SubmitOutcome(reportId: reportId, jobId: db.lastInsertedRowID, duplicate: false)
    }

    // MARK: Claim, heartbeat, complete, fail

    /// Claims up to `limit` runnable jobs in claim order (`priority DESC, id`) in one IMMEDIATE
    /// transaction, so two claimers can never take the same row; empty when nothing is runnable.
    /// Each job gets its own lease token. Fewer than `limit` come back when fewer are runnable
    /// (or some had unreadable stored bytes and were failed instead).
    public func claim(leaseMs: Int64, limit: Int) throws -> [ClaimedJob] {
        try claim(leaseMs: leaseMs, limit: limit) { db, now, limit in
            try Int64.fetchAll(
                db.cachedStatement(
                    sql: "SELECT id FROM jobs WHERE state = 'queued' AND run_after <= ? ORDER BY priority DESC, id LIMIT ?"),
                arguments: [now, limit]
            ).map { ($0, ()) }
        }.map { $0.job }
    }

    /// The most jobs one claim leases: a bound on the statement's size (and so on the number of
    /// cached statements, one per batch size) and on the leases one claimer holds at once.
    public static let maxClaimBatch = 64

    /// Picks the jobs a claim takes, inside the claim's write transaction (`now` is that
    /// transaction's clock reading), at most `limit`, in the order the claimer gets them: each
    /// job's id and what the caller wants to know about the choice; empty when nothing suits.
    typealias ClaimChoice<Choice> = (_ db: Database, _ now: Int64, _ limit: Int) throws -> [(jobId: Int64, choice: Choice)]

    /// Every claim goes through here, whatever picks the jobs, so leases, fencing tokens and
    /// unreadable stored bytes are handled one way.
    func claim<Choice>(
        leaseMs: Int64, limit: Int, choosing choose: ClaimChoice<Choice>
    ) throws -> [(job: ClaimedJob, choice: Choice)] {
        let limit = min(max(limit, 1), Self.maxClaimBatch)
        while true {
            let outcomes = try claimBatch(leaseMs: leaseMs, limit: limit, choosing: choose)
            var claimed: [(job: ClaimedJob, choice: Choice)] = []
            for outcome in outcomes {
                switch outcome {
                case .success(let job):
                    claimed.append(job)
                case .failure(let unreadable):
                    // Unreadable stored bytes stay unreadable: fail the job now instead of
                    // handing the error to the caller on every attempt, and claim the next one.
                    _ = try fail(
                        jobId: unreadable.jobId, token: unreadable.token, failure: .permanent(unreadable.error.description),
                        policy: RetryPolicy())
                }
            }
            // Only a batch that was all unreadable is claimed again: the caller gets what was good.
            if !claimed.isEmpty || outcomes.isEmpty { return claimed }
        }
    }

    /// The leasing statement for each batch size (index = jobs leased), written once rather
    /// than on every claim (the statement cache is keyed by this text).
    private static let leaseSQL: [String] = (0...maxClaimBatch).map { count in
        """
        UPDATE jobs
        SET state = 'running', attempts = attempts + 1, lease_token = chosen.column2,
            lease_expires_at = ?, updated_at = ?
        FROM (VALUES \(Array(repeating: "(?, ?)", count: max(count, 1)).joined(separator: ", "))) AS chosen
        WHERE jobs.id = chosen.column1 AND jobs.state = 'queued'
        RETURNING id, report_id, attempts, lease_token, lease_expires_at
        """
    }

    /// The reports of a claim's jobs, for each number of distinct reports (index = count).
    private static let reportsSQL: [String] = (0...maxClaimBatch).map { count in
        "SELECT id, format, raw, raw_size, build_ids FROM reports WHERE id IN (\(databaseQuestionMarks(count: count)))"
    }

    private static let leaseOneSQL = """
        UPDATE jobs
        SET state = 'running', attempts = attempts + 1, lease_token = ?, lease_expires_at = ?, updated_at = ?
        WHERE id = ? AND state = 'queued'
        RETURNING id, report_id, attempts, lease_token, lease_expires_at
        """

    private struct UnreadableJob: Error {
        var jobId: Int64
        var token: Int64
        var error: StorageError
    }

    private func claimBatch<Choice>(
        leaseMs: Int64, limit: Int, choosing choose: ClaimChoice<Choice>
    ) throws -> [Result<(job: ClaimedJob, choice: Choice), UnreadableJob>] {
        // Tokens come from the system's generator, distinct within the batch: one per lease.
        var tokens: [Int64] = []
        while tokens.count < limit {
            let token = Int64.random(in: 1...Int64.max)
            if !tokens.contains(token) { tokens.append(token) }
        }
        let claimed: [(Row, Row, Choice)] = try immediate { db in
            let now = clock()
            let chosen = Array(try choose(db, now, limit).prefix(limit))
            guard !chosen.isEmpty else { return [] }
            // One statement leases the whole batch, each row with its own token. RETURNING
            // comes back in no promised order, so rows are matched to the chosen order by id.
            let leased: [Row]
            if chosen.count == 1 {
                // One job (a remote worker asking for one, the last of the queue): the plain
                // single-row statement, without the join.
                leased = try Row.fetchAll(
                    db.cachedStatement(sql: Self.leaseOneSQL), arguments: [tokens[0], now + leaseMs, now, chosen[0].jobId])
            } else {
                var arguments: StatementArguments = [now + leaseMs, now]
                for (i, pick) in chosen.enumerated() { arguments += [pick.jobId, tokens[i]] }
                leased = try Row.fetchAll(db.cachedStatement(sql: Self.leaseSQL[chosen.count]), arguments: arguments)
            }
            // Columns by position (RETURNING's and the SELECT's order): by name, GRDB lowercases
            // and compares each name on every read (it showed in the claim's profile,
            // scripts/bench-queue-store.sh).
            let byId = Dictionary(leased.map { (($0[0] as Int64), $0) }, uniquingKeysWith: { first, _ in first })
            // The leased jobs' reports in one statement, not one per job.
            let reportIds = Array(Set(leased.map { $0[1] as Int64 }))
            var reports: [Int64: Row] = [:]
            if !reportIds.isEmpty {
                for row in try Row.fetchAll(
                    db.cachedStatement(sql: Self.reportsSQL[reportIds.count]), arguments: StatementArguments(reportIds))
                {
                    reports[row[0]] = row
                }
            }
            return try chosen.compactMap { pick -> (Row, Row, Choice)? in
                guard let job = byId[pick.jobId] else { return nil }
                let reportId: Int64 = job[1]
                guard let report = reports[reportId] else { throw StorageError.reportNotFound(reportId) }
                return (job, report, pick.choice)
            }
        }
        // Inflating happens after the write lock is released: it is the claim's own CPU.
        return claimed.map { entry -> Result<(job: ClaimedJob, choice: Choice), UnreadableJob> in
            let (job, report, choice) = entry
            let raw: Data
            // job: id, report_id, attempts, lease_token, lease_expires_at (RETURNING);
            // report: id, format, raw, raw_size, build_ids (`reportsSQL`).
            do throws(StorageError) { raw = try inflateStored(reportId: job[1], raw: report[2], size: report[3]) } catch {
                return .failure(UnreadableJob(jobId: job[0], token: job[3], error: error))
            }
            let claimedJob = ClaimedJob(
                jobId: job[0], reportId: job[1], attempts: job[2], leaseToken: job[3], leaseExpiresAt: job[4],
                format: report[1], raw: raw, storedBuildIds: report[4])
            return .success((claimedJob, choice))
        }
    }

    /// `reports.build_ids` as a list: NULL (stored before v7) and '' both hold none. Only
    /// `BuildID.hex` writes the column; a word that is not one names no build and is passed over
    /// (the ids only steer which worker gets the job).
    static func buildIds(stored: String?) -> [BuildID] {
        guard let stored else { return [] }
        return stored.split(separator: " ").compactMap { try? BuildID($0) }
    }

    private func inflateStored(reportId: Int64, raw: Data, size: Int) throws(StorageError) -> Data {
        do {
            return try Zlib.inflate(raw, limit: max(size, 1))
        } catch {
            throw .corruptStoredReport(reportId: reportId, error.description)
        }
    }

    /// Extends a running job's lease; throws `staleLease` when the token is no longer current.
    @discardableResult
    public func heartbeat(jobId: Int64, token: Int64, leaseMs: Int64) throws -> Int64 {
        try immediate { db in
            let expires = clock() + leaseMs
            try db.execute(
                sql: """
                    UPDATE jobs SET lease_expires_at = ?, updated_at = ?
                    WHERE id = ? AND lease_token = ? AND state = 'running'
                    """,
                arguments: [expires, clock(), jobId, token])
            guard db.changesCount == 1 else { throw StorageError.staleLease(jobId: jobId) }
            return expires
        }
    }

    /// Records a failed attempt: retryable failures go back to `queued` after a backoff until
    /// `policy.maxAttempts`, then the job is quarantined as `failed` with the reason.
    public func fail(jobId: Int64, token: Int64, failure: JobFailure, policy: RetryPolicy) throws -> FailOutcome {
        try immediate { db in
            guard let attempts = try Int.fetchOne(
                db, sql: "SELECT attempts FROM jobs WHERE id = ? AND lease_token = ? AND state = 'running'",
                arguments: [jobId, token])
            else { throw StorageError.staleLease(jobId: jobId) }
            let now = clock()
            switch failure {
            case .retryable(let reason) where attempts < policy.maxAttempts:
                let runAfter = now + policy.delay(afterAttempts: attempts)
                try db.execute(
                    sql: """
                        UPDATE jobs SET state = 'queued', run_after = ?, last_error = ?, lease_token = NULL,
                            lease_expires_at = NULL, updated_at = ?
                        WHERE id = ?
                        """,
                    arguments: [runAfter, reason, now, jobId])
                return .retryScheduled(runAfter: runAfter, attempts: attempts)
            case .retryable(let reason):
                let final = "\(reason) on \(attempts) attempt\(attempts == 1 ? "" : "s")"
                try markFailed(db, jobId: jobId, reason: final, now: now)
                return .failed(reason: final)
            case .permanent(let reason):
                try markFailed(db, jobId: jobId, reason: reason, now: now)
                return .failed(reason: reason)
            }
        }
    }

    private func markFailed(_ db: Database, jobId: Int64, reason: String, now: Int64) throws {
        try db.execute(
            sql: """
                UPDATE jobs SET state = 'failed', last_error = ?, lease_token = NULL, lease_expires_at = NULL,
                    updated_at = ?
                WHERE id = ?
                """,
            arguments: [reason, now, jobId])
    }

    /// Gives a lease back without counting the attempt (graceful shutdown interrupted it).
    public func release(jobId: Int64, token: Int64) throws {
        try immediate { db in
            try db.execute(
                sql: """
                    UPDATE jobs SET state = 'queued', attempts = MAX(attempts - 1, 0), lease_token = NULL,
                        lease_expires_at = NULL, run_after = ?, updated_at = ?
                    WHERE id = ? AND lease_token = ? AND state = 'running'
                    """,
                arguments: [clock(), clock(), jobId, token])
            guard db.changesCount == 1 else { throw StorageError.staleLease(jobId: jobId) }
        }
    }

    /// Requeues running jobs whose lease expired (their master or worker is gone). A job that
    /// already used `maxAttempts` is quarantined instead, so a job that kills its master
    /// cannot loop forever. Returns how many jobs were requeued or failed.
    @discardableResult
    public func recoverExpiredLeases(maxAttempts: Int = 3) throws -> (requeued: Int, failed: Int) {
        try immediate { db in
            let now = clock()
            try db.execute(
                sql: """
                    UPDATE jobs SET state = 'failed',
                        last_error = 'lease expired (master or worker lost) on ' || attempts || ' attempts',
                        lease_token = NULL, lease_expires_at = NULL, updated_at = ?
                    WHERE state = 'running' AND lease_expires_at < ? AND attempts >= ?
                    """,
                arguments: [now, now, maxAttempts])
            let failed = db.changesCount
            try db.execute(
                sql: """
                    UPDATE jobs SET state = 'queued', run_after = ?, last_error = 'lease expired (master or worker lost)',
                        lease_token = NULL, lease_expires_at = NULL, updated_at = ?
                    WHERE state = 'running' AND lease_expires_at < ?
                    """,
                arguments: [now, now, now])
            return (db.changesCount, failed)
        }
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

    /// Jobs still queued or running: `master --once` runs until this is zero.
    public func unfinishedCount() throws -> Int {
        try pool.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')") ?? 0
        }
    }

    /// Whether a claim now could find a job: a read, so pollers (a remote worker's long-poll
    /// claim) do not take the write lock just to learn the queue is empty.
    public func hasRunnableJob() throws -> Bool {
        try pool.read { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'queued' AND run_after <= ?)"),
                arguments: [clock()]) ?? false
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
            raw: try inflateStored(reportId: id, raw: row["raw"], size: row["raw_size"]), receivedAt: row["received_at"])
    }
}
