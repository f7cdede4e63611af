import Foundation
import WorkerProtocol

/// Keeps one slot's jobs ahead topped up and delivers its finished results, on a thread of its
/// own: the slot thread only feeds its process, so the process never sits idle while the
/// master answers a claim (when the slot thread made the claims itself, that wait left CPU
/// idle in `scripts/bench-remote.sh`).
/// Sendable: `condition` guards `ahead`, `finished`, `slow`, `waiting`, `drained` and `ended`; `connection` and `courier` are immutable.
final class SlotFeeder: @unchecked Sendable {
    /// Jobs leased per slot: one request's HTTP cost is shared by this many jobs and their
    /// results, while at most this many wait behind a slow one (and only for
    /// `aheadLimitSeconds` before they are handed back).
    static let depth = RemoteProtocol.maxJobsPerSlot
    /// More are asked for when this many are left ahead: half, so a claim brings enough jobs
    /// to outlast its own round trip (scripts/bench-remote.sh).
    static let lowWater = depth / 2
    /// How long jobs fetched ahead may wait behind a running one before they are handed back,
    /// and a finished result before it is delivered on its own.
    static let aheadLimitSeconds = 1.0

    private let connection: RemoteConnection
    private let courier: Courier
    private let condition = NSCondition()
    private var ahead: [RemoteJob] = []
    private var finished: [RemoteConnection.Finished] = []
    /// The slot's current job runs long: nothing more is leased for it until it ends.
    private var slow = false
    /// The slot waits in `next()`: the feeder may long-poll.
    private var waiting = false
    /// A claim without waiting found nothing: no more such claims until the slot waits.
    private var drained = false
    private var ended = false
    private let done = DispatchSemaphore(value: 0)

    init(connection: RemoteConnection, courier: Courier, name: String) {
        self.connection = connection
        self.courier = courier
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.start()
    }

    /// The next job for the slot, waiting while none is ahead; nil when the worker stops (the
    /// slot checks again).
    func next() -> RemoteJob? {
        condition.lock()
        defer { condition.unlock() }
        slow = false
        if ahead.isEmpty {
            waiting = true
            drained = false
            condition.broadcast()
            while ahead.isEmpty && !connection.isStopping && !ended {
                _ = condition.wait(until: Date().addingTimeInterval(0.2))
            }
            waiting = false
        }
        condition.broadcast()
        return ahead.isEmpty ? nil : ahead.removeFirst()
    }

    /// A job's reply, delivered with the next claim (or alone once it has waited
    /// `aheadLimitSeconds`). Its lease stays held (renewed) until the master answers.
    func deliver(_ result: RemoteConnection.Finished) {
        condition.lock()
        finished.append(result)
        condition.broadcast()
        condition.unlock()
    }

    /// The slot's current job is slow: the jobs waiting behind it go back to the queue for an
    /// idle worker, and none are leased until it ends.
    func handBackAhead() {
        condition.lock()
        let jobs = ahead
        ahead = []
        slow = true
        condition.unlock()
        connection.handBack(jobs)
    }

    /// Stops leasing; hands back what is ahead, passes undelivered results to the courier.
    func finish() {
        condition.lock()
        ended = true
        condition.broadcast()
        condition.unlock()
        done.wait()
    }

    private func loop() {
        defer { done.signal() }
        while true {
            condition.lock()
            while !ended && !connection.isStopping && !needsClaim() {
                _ = condition.wait(until: Date().addingTimeInterval(0.2))
            }
            if ended || connection.isStopping {
                let (jobs, results) = (ahead, finished)
                ahead = []
                finished = []
                condition.unlock()
                for result in results { courier.send(result) }
                connection.handBack(jobs)
                return
            }
            var results = finished
            finished = []
            let want = slow || (drained && !waiting) ? 0 : Self.depth - ahead.count
            // Waits (long-poll) only while the slot has nothing to run; otherwise asks without
            // waiting, once, until the slot runs out.
            let wait = waiting && ahead.isEmpty ? 5.0 : 0
            condition.unlock()
            // Whatever the claim could not deliver goes to the courier.
            let jobs = connection.claim(delivering: &results, courier: courier, waitSeconds: wait, maxJobs: want)
            condition.lock()
            let late = slow ? jobs : []
            if !slow { ahead += jobs }
            if want > 0 && wait == 0 && jobs.isEmpty { drained = true }
            condition.broadcast()
            condition.unlock()
            // Leased while the slot's job turned slow: not to wait behind it.
            connection.handBack(late)
        }
    }

    /// Caller holds `condition`.
    private func needsClaim() -> Bool {
        let overdue = finished.first.map { Date().timeIntervalSince($0.at) > Self.aheadLimitSeconds } ?? false
        return overdue || (waiting && ahead.isEmpty) || (!slow && !drained && ahead.count <= Self.lowWater)
    }
}
