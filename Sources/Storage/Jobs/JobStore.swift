/// The calls the master makes to lease and finish jobs, and nothing else: the queue's narrow
/// interface. `ServiceDatabase` (SQLite, one master) implements it; a second backend (PostgreSQL,
/// for teams that outgrow one master: docs/scaling.md) implements it
/// in a new file of its own, with claims as `SELECT … FOR UPDATE SKIP LOCKED` plus an `UPDATE`
/// in one transaction. The master's lease code (`WorkerSlot`, `JobOutcomes`, `RemoteWorkerPool`)
/// depends on this protocol, not on SQLite.
///
/// What every implementation must keep:
/// - A claim takes the best runnable job (`priority DESC, id`, `run_after <= now`) that no
///   other claimer can take at the same time, sets it `running` with `attempts + 1`, a new
///   random lease token and `lease_expires_at = now + leaseMs`, and returns its report's
///   bytes decompressed. Unreadable stored bytes fail that job permanently and the claim moves on.
/// - `heartbeat`, `complete`, `fail` and `release` match on the job id *and* its current lease
///   token (the fencing token) and throw `StorageError.staleLease` when it is no longer
///   current, having changed nothing.
/// - A claim of several jobs leases each as above (its own token), in claim order, in one
///   transaction; completions of several jobs commit in one transaction, each checked against
///   its own token, so a stale one is refused alone.
/// - `complete` stores the result, marks the job `done` and moves the report between groups
///   (the group ledger: counts exact at every commit) and rewrites its missing debug files,
///   all in one transaction.
/// - Times are milliseconds since the Unix epoch on the store's clock (`now()`), the clock that
///   lease expiry and `run_after` are compared with.
///
/// Submitting reports, queries, retention and migrations are not part of it: they are the
/// backend's own (and the CLI's and server's), not the master's lease loop.
public protocol JobLeasing: Sendable {
    /// Current time on the store's clock, in milliseconds since the Unix epoch.
    func now() -> Int64

    /// Claims up to `limit` of the best runnable jobs in claim order, each with its own lease
    /// token, in one statement; empty when nothing is runnable now.
    func claim(leaseMs: Int64, limit: Int) throws -> [ClaimedJob]

    /// Claims up to `limit` runnable jobs that best suit a worker holding `affinity.holds`
    /// (symbol affinity, remote workers), in the order single claims would take them; empty
    /// when nothing suits now.
    func claim(leaseMs: Int64, affinity: AffinityPreference, limit: Int) throws -> [(job: ClaimedJob, match: AffinityMatch)]

    /// Extends a running job's lease; returns the new expiry. Throws `staleLease` when the token
    /// is no longer current.
    @discardableResult
    func heartbeat(jobId: Int64, token: Int64, leaseMs: Int64) throws -> Int64

    /// Stores several completions in one transaction, each fenced by its own token: a stale one
    /// writes nothing and is answered `.stale` while the others commit. Each stored one marks
    /// its job done, stores its result and files its report in its group in that transaction.
    func complete(_ batch: [Completion]) throws -> [CompletionOutcome]

    /// Records a failed attempt: a retry after backoff, or quarantine as `failed`.
    func fail(jobId: Int64, token: Int64, failure: JobFailure, policy: RetryPolicy) throws -> FailOutcome

    /// Gives a lease back without counting the attempt (a drain ran out of time).
    func release(jobId: Int64, token: Int64) throws

    /// Requeues running jobs whose lease expired, quarantining those that used `maxAttempts`.
    @discardableResult
    func recoverExpiredLeases(maxAttempts: Int) throws -> (requeued: Int, failed: Int)

    /// Whether a claim now could find a job, answered without the write lock (a remote
    /// worker's long-poll asks this before each claim).
    func hasRunnableJob() throws -> Bool

    /// Jobs still queued or running (`master --once` stops at zero).
    func unfinishedCount() throws -> Int
}

extension JobLeasing {
    /// Claims the best runnable job; nil when nothing is runnable now.
    public func claim(leaseMs: Int64) throws -> ClaimedJob? {
        try claim(leaseMs: leaseMs, limit: 1).first
    }

    /// Claims the runnable job that best suits a worker holding `affinity.holds`; nil when
    /// nothing suits now.
    public func claim(leaseMs: Int64, affinity: AffinityPreference) throws -> (job: ClaimedJob, match: AffinityMatch)? {
        try claim(leaseMs: leaseMs, affinity: affinity, limit: 1).first
    }

    /// Stores one completion in a transaction of its own; throws `staleLease` when the token is
    /// no longer current, having changed nothing.
    public func complete(jobId: Int64, token: Int64, result: JobResult) throws {
        if try complete([Completion(jobId: jobId, token: token, result: result)]) == [.stale] {
            throw StorageError.staleLease(jobId: jobId)
        }
    }
}

/// The remote-worker rows the master writes for `stackline workers`: not a lease call, so a
/// protocol of its own, next to `JobLeasing` (`RemoteWorkerPool` needs both).
public protocol WorkerRoster: Sendable {
    /// Writes every row (insert or replace by id) at once.
    func saveWorkers(_ rows: [WorkerRow]) throws

    /// Deletes workers not heard from since `lastHeartbeatBefore` (ms); returns how many went.
    @discardableResult
    func deleteWorkers(lastHeartbeatBefore: Int64) throws -> Int

    /// The token owning worker id `id`, which becomes `token` (at `now`) when no token did.
    func bindWorker(_ id: String, token: Int64, now: Int64) throws -> Int64

    /// The token owning worker id `id`, if one does.
    func workerOwner(_ id: String) throws -> Int64?

    /// Forgets the owners of worker ids that are not connected and last connected before `before` (ms).
    func forgetWorkerOwners(connectedBefore before: Int64) throws
}

extension ServiceDatabase: JobLeasing {}

extension ServiceDatabase: WorkerRoster {}
