import Compression
import Foundation
import ReportModel
import SQLInterface

/// The job queue on either backend (`JobLeasing`'s requirements, written once): submits, claims,
/// leases and their fencing tokens, failures and lease recovery. Completions are
/// `SQLJobQueue.store(_:in:now:)` (Completions.swift), the group ledger's entry.
///
/// Claims differ between backends in one clause only: on PostgreSQL the candidate rows are
/// locked `FOR UPDATE SKIP LOCKED`, so concurrent claimers on any node pass each other's rows
/// instead of waiting, and the row lock makes a double claim impossible; SQLite's one writer
/// already serializes claims.
extension SQLStore {
    // MARK: Submit

    /// Stores several reports in one transaction, in order, each deduplicated (same SHA-256 of
    /// the decompressed bytes in the same namespace, or like it without one) against those
    /// stored and those before it. Another namespace's reports are never looked at.
    public func submit(_ reports: [StorableReport]) throws -> [SubmitOutcome] {
        try write { db in
            let now = self.now()
            return try reports.map { try SQLJobQueue.insert($0, db, now: now) }
        }
    }

    /// Stores one report and enqueues its job (`submit(_:)` of one).
    public func submit(_ report: NewReport) throws -> SubmitOutcome {
        try submit([StorableReport(report)])[0]
    }

    // MARK: Claim

    /// Claims up to `limit` runnable jobs in claim order (`priority DESC, id`) in one
    /// transaction, each with its own lease token; empty when nothing is runnable. Fewer than
    /// `limit` come back when fewer are runnable (or some had unreadable stored bytes and were
    /// failed instead).
    public func claim(leaseMs: Int64, limit: Int) throws -> [ClaimedJob] {
        try claim(leaseMs: leaseMs, limit: limit) { db, now, limit in
            try db.rows(
                db.dialect == .sqlite ? SQLJobQueue.candidatesSQLite : SQLJobQueue.candidatesPostgres, now, limit
            ).map { (try $0.int64(0), ()) }
        }.map { $0.job }
    }

    /// Every claim goes through here, whatever picks the jobs, so leases, fencing tokens and
    /// unreadable stored bytes are handled one way.
    func claim<Choice>(
        leaseMs: Int64, limit: Int, choosing choose: SQLJobQueue.ClaimChoice<Choice>
    ) throws -> [(job: ClaimedJob, choice: Choice)] {
        let limit = min(max(limit, 1), SQLJobQueue.maxClaimBatch)
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

    private func claimBatch<Choice>(
        leaseMs: Int64, limit: Int, choosing choose: SQLJobQueue.ClaimChoice<Choice>
    ) throws -> [Result<(job: ClaimedJob, choice: Choice), SQLJobQueue.UnreadableJob>] {
        // Tokens come from the system's generator, distinct within the batch: one per lease.
        var tokens: [Int64] = []
        while tokens.count < limit {
            let token = Int64.random(in: 1...Int64.max)
            if !tokens.contains(token) { tokens.append(token) }
        }
        let claimed: [(SQLRow, SQLRow, Choice)] = try write { db in
            let now = self.now()
            let chosen = Array(try choose(db, now, limit).prefix(limit))
            guard !chosen.isEmpty else { return [] }
            // One statement leases the whole batch, each row with its own token. RETURNING
            // comes back in no promised order, so rows are matched to the chosen order by id.
            let leased: [SQLRow]
            if chosen.count == 1 {
                // One job (a remote worker asking for one, the last of the queue): the plain
                // single-row statement, without the join.
                leased = try db.rows(SQLJobQueue.leaseOneSQL, tokens[0], now + leaseMs, now, chosen[0].jobId)
            } else {
                var arguments: [SQLValue] = [.integer(now + leaseMs), .integer(now)]
                for (i, pick) in chosen.enumerated() { arguments += [.integer(pick.jobId), .integer(tokens[i])] }
                leased = try db.rows(SQLJobQueue.leaseSQL[chosen.count], arguments)
            }
            var byId: [Int64: SQLRow] = [:]
            for row in leased where byId[try row.int64(0)] == nil { byId[try row.int64(0)] = row }
            // The leased jobs' reports in one statement, not one per job.
            let reportIds = Array(Set(try leased.map { try $0.int64(1) }))
            var reports: [Int64: SQLRow] = [:]
            if !reportIds.isEmpty {
                for row in try db.rows(SQLJobQueue.reportsSQL[reportIds.count], reportIds.map(\.sqlValue)) {
                    reports[try row.int64(0)] = row
                }
            }
            return try chosen.compactMap { pick -> (SQLRow, SQLRow, Choice)? in
                guard let job = byId[pick.jobId] else { return nil }
                let reportId = try job.int64(1)
                guard let report = reports[reportId] else { throw StorageError.reportNotFound(reportId) }
                return (job, report, pick.choice)
            }
        }
        // Inflating happens after the transaction: it is the claim's own CPU.
        return try claimed.map { entry -> Result<(job: ClaimedJob, choice: Choice), SQLJobQueue.UnreadableJob> in
            let (job, report, choice) = entry
            // job: id, report_id, attempts, lease_token, lease_expires_at (RETURNING);
            // report: id, format, raw, raw_size, build_ids (`reportsSQL`).
            let (jobId, reportId, token) = (try job.int64(0), try job.int64(1), try job.int64(3))
            let raw: Data
            do {
                raw = try SQLJobQueue.inflateStored(reportId: reportId, raw: try report.data(2), size: try report.int(3))
            } catch let error as StorageError {
                return .failure(.init(jobId: jobId, token: token, error: error))
            }
            let claimedJob = ClaimedJob(
                jobId: jobId, reportId: reportId, attempts: try job.int(2), leaseToken: token, leaseExpiresAt: try job.int64(4),
                format: try report.string(1), raw: raw, storedBuildIds: try report.optionalString(4))
            return .success((claimedJob, choice))
        }
    }

    // MARK: Leases

    /// Extends a running job's lease; throws `staleLease` when the token is no longer current.
    @discardableResult
    public func heartbeat(jobId: Int64, token: Int64, leaseMs: Int64) throws -> Int64 {
        try write { db in
            let now = self.now()
            let expires = now + leaseMs
            let changed = try db.execute(
                "UPDATE jobs SET lease_expires_at = ?, updated_at = ? WHERE id = ? AND lease_token = ? AND state = 'running'",
                expires, now, jobId, token)
            guard changed == 1 else { throw StorageError.staleLease(jobId: jobId) }
            return expires
        }
    }

    /// Records a failed attempt: retryable failures go back to `queued` after a backoff until
    /// `policy.maxAttempts`, then the job is quarantined as `failed` with the reason.
    public func fail(jobId: Int64, token: Int64, failure: JobFailure, policy: RetryPolicy) throws -> FailOutcome {
        try write { db in
            // Locked on PostgreSQL, so a lease recovery cannot change the row between the read
            // and the update.
            guard let attempts = try db.int(
                db.dialect == .sqlite ? SQLJobQueue.attemptsSQLite : SQLJobQueue.attemptsPostgres, jobId, token)
            else { throw StorageError.staleLease(jobId: jobId) }
            let now = self.now()
            switch failure {
            case .retryable(let reason) where attempts < policy.maxAttempts:
                let runAfter = now + policy.delay(afterAttempts: attempts)
                try db.execute(
                    """
                    UPDATE jobs SET state = 'queued', run_after = ?, last_error = ?, lease_token = NULL,
                        lease_expires_at = NULL, updated_at = ?
                    WHERE id = ?
                    """,
                    runAfter, reason, now, jobId)
                return .retryScheduled(runAfter: runAfter, attempts: attempts)
            case .retryable(let reason):
                let final = "\(reason) on \(attempts) attempt\(attempts == 1 ? "" : "s")"
                try SQLJobQueue.markFailed(db, jobId: jobId, reason: final, now: now)
                return .failed(reason: final)
            case .permanent(let reason):
                try SQLJobQueue.markFailed(db, jobId: jobId, reason: reason, now: now)
                return .failed(reason: reason)
            }
        }
    }

    /// Gives a lease back without counting the attempt (graceful shutdown interrupted it).
    public func release(jobId: Int64, token: Int64) throws {
        try write { db in
            let now = self.now()
            let changed = try db.execute(
                """
                UPDATE jobs SET state = 'queued', attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END,
                    lease_token = NULL, lease_expires_at = NULL, run_after = ?, updated_at = ?
                WHERE id = ? AND lease_token = ? AND state = 'running'
                """,
                now, now, jobId, token)
            guard changed == 1 else { throw StorageError.staleLease(jobId: jobId) }
        }
    }

    /// Requeues running jobs whose lease expired (their master or worker is gone). A job that
    /// already used `maxAttempts` is quarantined instead, so a job that kills its master
    /// cannot loop forever. Any node may run it at any time: a second run finds the rows no
    /// longer `running`. Returns how many jobs were requeued or failed.
    @discardableResult
    public func recoverExpiredLeases(maxAttempts: Int = 3) throws -> (requeued: Int, failed: Int) {
        try write { db in
            let now = self.now()
            let failed = try db.execute(
                """
                UPDATE jobs SET state = 'failed',
                    last_error = 'lease expired (master or worker lost) on ' || CAST(attempts AS TEXT) || ' attempts',
                    lease_token = NULL, lease_expires_at = NULL, updated_at = ?
                WHERE state = 'running' AND lease_expires_at < ? AND attempts >= ?
                """,
                now, now, maxAttempts)
            let requeued = try db.execute(
                """
                UPDATE jobs SET state = 'queued', run_after = ?, last_error = 'lease expired (master or worker lost)',
                    lease_token = NULL, lease_expires_at = NULL, updated_at = ?
                WHERE state = 'running' AND lease_expires_at < ?
                """,
                now, now, now)
            return (requeued, failed)
        }
    }

    // MARK: Queue state

    /// Jobs still queued or running: `master --once` runs until this is zero.
    public func unfinishedCount() throws -> Int {
        try read { db in try db.int("SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')") ?? 0 }
    }

    /// Whether a claim now could find a job: a read, so pollers (a remote worker's long-poll
    /// claim) do not take the write lock just to learn the queue is empty.
    public func hasRunnableJob() throws -> Bool {
        try read { db in try db.bool("SELECT 1 FROM jobs WHERE state = 'queued' AND run_after <= ? LIMIT 1", self.now()) }
    }
}

/// The queue's statements and the rules around them.
enum SQLJobQueue {
    /// The most jobs one claim leases: a bound on the statement's size (and so on the number of
    /// prepared statements, one per batch size) and on the leases one claimer holds at once.
    static let maxClaimBatch = 64

    /// Picks the jobs a claim takes, inside the claim's write transaction (`now` is that
    /// transaction's clock reading), at most `limit`, in the order the claimer gets them: each
    /// job's id and what the caller wants to know about the choice; empty when nothing suits.
    typealias ClaimChoice<Choice> = (_ db: SQLExecutor, _ now: Int64, _ limit: Int) throws -> [(jobId: Int64, choice: Choice)]

    struct UnreadableJob: Error {
        var jobId: Int64
        var token: Int64
        var error: StorageError
    }

    private static let candidates = "SELECT id FROM jobs WHERE state = 'queued' AND run_after <= ? ORDER BY priority DESC, id LIMIT ?"
    static let candidatesSQLite = candidates
    static let candidatesPostgres = candidates + " FOR UPDATE SKIP LOCKED"

    private static let attempts = "SELECT attempts FROM jobs WHERE id = ? AND lease_token = ? AND state = 'running'"
    static let attemptsSQLite = attempts
    static let attemptsPostgres = attempts + " FOR UPDATE"

    /// The leasing statement for each batch size (index = jobs leased), written once rather
    /// than on every claim (statements are prepared once per text). The list's values are cast
    /// because PostgreSQL types a bare `VALUES` placeholder as text.
    static let leaseSQL: [String] = (0...maxClaimBatch).map { count in
        """
        UPDATE jobs
        SET state = 'running', attempts = attempts + 1, lease_token = chosen.column2,
            lease_expires_at = ?, updated_at = ?
        FROM (VALUES \(Array(repeating: "(CAST(? AS BIGINT), CAST(? AS BIGINT))", count: max(count, 1)).joined(separator: ", "))) AS chosen
        WHERE jobs.id = chosen.column1 AND jobs.state = 'queued'
        RETURNING jobs.id, jobs.report_id, jobs.attempts, jobs.lease_token, jobs.lease_expires_at
        """
    }

    /// The reports of a claim's jobs, for each number of distinct reports (index = count).
    static let reportsSQL: [String] = (0...maxClaimBatch).map { count in
        "SELECT id, format, raw, raw_size, build_ids FROM reports WHERE id IN (\(sqlPlaceholders(count)))"
    }

    static let leaseOneSQL = """
        UPDATE jobs
        SET state = 'running', attempts = attempts + 1, lease_token = ?, lease_expires_at = ?, updated_at = ?
        WHERE id = ? AND state = 'queued'
        RETURNING id, report_id, attempts, lease_token, lease_expires_at
        """

    static func markFailed(_ db: SQLExecutor, jobId: Int64, reason: String, now: Int64) throws {
        try db.execute(
            """
            UPDATE jobs SET state = 'failed', last_error = ?, lease_token = NULL, lease_expires_at = NULL, updated_at = ?
            WHERE id = ?
            """,
            reason, now, jobId)
    }

    static func inflateStored(reportId: Int64, raw: Data, size: Int) throws(StorageError) -> Data {
        do {
            return try Zlib.inflate(raw, limit: max(size, 1))
        } catch {
            throw .corruptStoredReport(reportId: reportId, error.description)
        }
    }

    /// The digest lookup as each backend's unique index spells it, so the lookup uses it
    /// (SQLite matches an index expression only as written: `ifnull`, since v9).
    static let duplicateSQLite = "SELECT id FROM reports WHERE digest = ? AND ifnull(namespace, '') = ?"
    static let duplicatePostgres = "SELECT id FROM reports WHERE digest = ? AND COALESCE(namespace, '') = ?"

    static func insert(_ storable: StorableReport, _ db: SQLExecutor, now: Int64) throws -> SubmitOutcome {
        let report = storable.report
        if let existing = try db.int64(
            db.dialect == .sqlite ? duplicateSQLite : duplicatePostgres, storable.digest, report.namespace ?? "")
        {
            return SubmitOutcome(reportId: existing, jobId: nil, duplicate: true)
        }
        let reportId = try db.insert(
            """
            INSERT INTO reports (raw, raw_size, format, digest, app, version, kind, received_at, namespace, build_ids,
                                 os_version, device_model, device_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            storable.compressed, report.raw.count, report.format, storable.digest, report.app, report.version,
            report.kind.rawValue, now, report.namespace, report.buildIds?.map(\.hex).joined(separator: " "),
            report.device?.osVersion, report.device?.model, report.device?.id)
        let state: JobState = report.rejectedBecause == nil ? .queued : .failed
        let jobId = try db.insert(
            """
            INSERT INTO jobs (report_id, state, priority, attempts, run_after, last_error, created_at, updated_at)
            VALUES (?, ?, ?, 0, ?, ?, ?, ?)
            """,
            reportId, state.rawValue, report.priority, now, report.rejectedBecause, now, now)
        return SubmitOutcome(reportId: reportId, jobId: jobId, duplicate: false)
    }
}
