import Dispatch
import JobQueue

/// A slot's next claim, run on another thread so the slot keeps feeding its worker meanwhile.
/// A claim needs the database's write lock, which the committer holds for a whole batch of
/// completions (a few milliseconds under load, the time a worker takes for ten or more jobs):
/// a slot that claimed on its own thread left its worker idle behind every such batch. Started
/// while jobs still wait, a claim is usually answered before they run out. Owned and used by
/// one slot's thread only.
struct ClaimAhead {
    private var pending: Ticket<[ClaimedJob]>?

    /// Whether a claim was started and not yet taken.
    var isPending: Bool { pending != nil }

    /// Starts a claim of up to `limit` jobs, unless one is already under way.
    mutating func start(_ db: any JobLeasing, leaseMs: Int64, limit: Int) {
        guard pending == nil else { return }
        let ticket = Ticket<[ClaimedJob]>()
        pending = ticket
        DispatchQueue.global().async {
            ticket.fulfil(Result { try db.claim(leaseMs: leaseMs, limit: limit) })
        }
    }

    /// The jobs the started claim leased: nil when none was started, or when it has not been
    /// answered and `waiting` is false. Throws what the claim threw (a database error).
    mutating func take(waiting: Bool) throws -> [ClaimedJob]? {
        guard let ticket = pending, waiting || ticket.isAnswered else { return nil }
        pending = nil
        return try ticket.wait()
    }
}

/// How many jobs a slot should hold (running, sent ahead and waiting), from how long its jobs
/// have been taking: enough for `budgetSeconds` of its worker's time, so a claim is answered
/// before they run out, but no more, so a short burst of slow jobs is shared between slots
/// instead of queuing behind one worker. Never more than the configured `--prefetch`.
struct JobPace {
    /// The work a slot holds at its recent pace: about five of the committer's longest batches,
    /// which a claim may wait behind.
    static let budgetSeconds = 0.02
    /// Held before the slot has timed a job.
    static let initialTarget = 4
    /// Smoothed seconds per job; nil until the first job is timed.
    private var secondsPerJob: Double?

    /// Records one job's time on the worker.
    mutating func record(seconds: Double) {
        guard seconds >= 0 else { return }
        secondsPerJob = secondsPerJob.map { 0.8 * $0 + 0.2 * seconds } ?? seconds
    }

    /// The jobs to hold, between 1 and `limit`.
    func target(limit: Int) -> Int {
        let wanted = secondsPerJob.map { Int(min(Double(limit), (Self.budgetSeconds / max($0, 1e-6)).rounded(.up))) }
            ?? Self.initialTarget
        return min(max(wanted, 2), limit)
    }
}
