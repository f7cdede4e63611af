import Foundation
import Storage
import SystemCalls

/// A slot's next claim, run on a thread of its own so the slot keeps feeding its worker
/// meanwhile. A claim needs the database's write lock, which the committer holds for a whole
/// batch of completions (a few milliseconds under load, the time a worker takes for ten or more
/// jobs): a slot that claimed on its own thread left its worker idle behind every such batch.
/// Started while jobs still wait, a claim is usually answered before they run out.
///
/// A thread per slot rather than Dispatch's: the thread runs at the slot's nice value, and a
/// nice value, once raised, stays with the thread (Dispatch's threads also run Swift
/// concurrency's jobs, such as `serve`'s request handling).
/// Sendable: `condition` guards `wanted`, `answer`, `pending` and `closed`.
final class ClaimAhead: @unchecked Sendable {
    // Guards everything below; the claim thread sleeps on it while no claim is wanted.
    private let condition = NSCondition()
    /// Jobs wanted by a claim the thread has not started yet.
    private var wanted: Int?
    /// The last claim's outcome, until the slot takes it.
    private var answer: Result<[ClaimedJob], any Error>?
    /// A claim was started and its outcome not yet taken.
    private var pending = false
    private var closed = false

    /// Starts the slot's claim thread; `close()` ends it. `name` is what `top -H` shows (Linux
    /// keeps 15 bytes of it).
    init(_ db: any JobLeasing, leaseMs: Int64, niceness: Int32, name: String) {
        let thread = Thread { [self] in
            if niceness > 0 { SystemCall.setThreadNiceness(niceness) }
            run(db, leaseMs: leaseMs)
        }
        thread.name = name
        thread.start()
    }

    /// Whether a claim was started and its jobs not yet taken.
    var isPending: Bool {
        condition.lock()
        defer { condition.unlock() }
        return pending
    }

    /// Starts a claim of up to `limit` jobs, unless one is already under way.
    func start(limit: Int) {
        condition.lock()
        defer { condition.unlock() }
        guard !pending, !closed else { return }
        pending = true
        wanted = limit
        condition.signal()
    }

    /// The jobs the started claim leased: nil when none was started, or when it has not been
    /// answered and `waiting` is false. Throws what the claim threw (a database error).
    func take(waiting: Bool) throws -> [ClaimedJob]? {
        condition.lock()
        defer { condition.unlock() }
        guard pending else { return nil }
        while answer == nil {
            guard waiting else { return nil }
            condition.wait()
        }
        let outcome = answer
        answer = nil
        pending = false
        return try outcome?.get()
    }

    /// Ends the thread once it is idle. Jobs of a claim not taken would be left to lease
    /// expiry: the slot takes (and hands back) what it claimed first.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    private func run(_ db: any JobLeasing, leaseMs: Int64) {
        while true {
            condition.lock()
            while wanted == nil, !closed { condition.wait() }
            guard let limit = wanted else {
                condition.unlock()
                return
            }
            wanted = nil
            condition.unlock()
            let outcome = Result { try db.claim(leaseMs: leaseMs, limit: limit) }
            condition.lock()
            answer = outcome
            condition.broadcast()
            condition.unlock()
        }
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
