import SQLInterface

/// One job's completion, as the master hands it to the store: the job, the lease token it was
/// claimed with (the fencing token), and the result.
public struct Completion: Sendable {
    public var jobId: Int64
    public var token: Int64
    public var result: JobResult

    public init(jobId: Int64, token: Int64, result: JobResult) {
        self.jobId = jobId
        self.token = token
        self.result = result
    }
}

/// What one completion of a batch did.
public enum CompletionOutcome: Sendable, Equatable {
    /// Result stored, job done, report filed in its group.
    case stored
    /// The token was no longer current: nothing was written for this job.
    case stale
}

extension SQLStore {
    /// Stores several completions in one transaction, in order, and answers each
    /// alone. Each is fenced by its own token: a stale one writes nothing and is answered
    /// `.stale`, and its neighbours still commit. Each stored one changes its job's state,
    /// stores its result row and moves its report between groups inside this transaction,
    /// so the group ledger is exact at every commit, as with one completion per transaction.
    /// Any other error rolls the whole batch back (the caller retries them one by one).
    public func complete(_ batch: [Completion]) throws -> [CompletionOutcome] {
        guard !batch.isEmpty else { return [] }
        return try write { db in
            try SQLJobQueue.store(batch, in: db, now: self.now())
        }
    }
}

extension SQLJobQueue {
    /// Stores `batch` inside the caller's transaction, on either backend.
    static func store(_ batch: [Completion], in db: SQLExecutor, now: Int64) throws -> [CompletionOutcome] {
        try ResultPositions.holdHorizon(db)
        var joins = GroupLedger.PendingJoins(now: now)
        let outcomes = try batch.map { try store($0, db, now: now, joins: &joins) }
        try joins.apply(db)
        return outcomes
    }

    private static func store(
        _ completion: Completion, _ db: SQLExecutor, now: Int64, joins: inout GroupLedger.PendingJoins
    ) throws -> CompletionOutcome {
        // The fencing check comes first and writes only when the token is current, so a stale
        // completion leaves nothing behind to roll back and needs no savepoint of its own.
        // Statements are kept prepared by the backend: compiling them again for every job was
        // about half of a completion's CPU (scripts/bench-queue-store.sh).
        guard let reportId = try db.int64(
            """
            UPDATE jobs SET state = 'done', lease_token = NULL, lease_expires_at = NULL,
                last_error = NULL, updated_at = ?
            WHERE id = ? AND lease_token = ? AND state = 'running'
            RETURNING report_id
            """,
            now, completion.jobId, completion.token)
        else { return .stale }
        let result = completion.result
        // What the ledger needs, in one statement: the report's app, version and arrival, and
        // its previous result, if any, with that result's group.
        let report = try db.row(
            """
            SELECT r.app, COALESCE(r.version, ''), r.received_at, CASE WHEN s.report_id IS NOT NULL THEN 1 ELSE 0 END,
                s.fingerprint, s.own_fingerprint
            FROM reports r LEFT JOIN results s ON s.report_id = r.id WHERE r.id = ?
            """,
            reportId)
        let member = GroupLedger.Member(
            app: try report?.optionalString(0), version: try report?.optionalString(1) ?? "", seen: try report?.optionalInt64(2) ?? 0)
        let hadResult = try report?.optionalInt64(3) == 1
        let previous = try report?.optionalString(4)
        let previousOwn = try report?.optionalString(5)
        // A group merged by hand files its reports under the group it was merged into.
        var filed = result.group
        var own: String?
        if let key = result.group {
            if let previousOwn, let previous {
                try GroupMerges.carry(db, previousOwn: previousOwn, previousGroup: previous, to: key, app: member.app, now: now)
            }
            let target = try GroupMerges.target(db, of: key)
            filed = target.key
            own = target.own
        }
        try db.execute(
            """
            INSERT INTO results (report_id, symbolicated, symbolicated_size, status, fingerprint, own_fingerprint, completed_at,
                                 received_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (report_id) DO UPDATE SET
                symbolicated = excluded.symbolicated, symbolicated_size = excluded.symbolicated_size,
                status = excluded.status, fingerprint = excluded.fingerprint, own_fingerprint = excluded.own_fingerprint,
                completed_at = excluded.completed_at
            """,
            reportId, result.compressedJSON, result.jsonSize, result.status.rawValue, filed?.fingerprint, own, now, member.seen)
        try GroupLedger.move(db, reportId: reportId, member: member, from: previous, to: filed, joins: &joins)
        if previousOwn == nil, own == nil, let previous, let new = filed?.fingerprint, new != previous {
            try GroupMerges.retarget(db, from: previous, to: new, now: now, joins: &joins)
        }
        try GroupLedger.recordMissing(db, reportId: reportId, images: result.missingImages, replacing: hadResult)
        _ = try requeueIfArrived(db, jobId: completion.jobId, reportId: reportId, missing: result.missingImages, now: now)
        return .stored
    }
}
