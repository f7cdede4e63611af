import Foundation
import SystemCalls

/// Group commit: the one mechanism that lets independent callers share write transactions.
/// Callers queue an item and wait (by `async`, by blocking, or by a callback); one writer
/// thread takes everything queued, writes it in one transaction (`writeBatch`), and answers
/// each caller with its own outcome. Under load a transaction carries many items, so SQLite's
/// BEGIN/COMMIT, the write lock and the WAL frames of shared pages are paid per batch, not per
/// item; with one caller it is one transaction per item, as before. There is no lingering:
/// a batch is whatever arrived while the previous transaction ran.
///
/// A batch whose transaction throws was rolled back whole; each of its items is then written
/// alone (`writeOne`), so only the items that really cannot be written fail. Nothing is
/// answered before its transaction commits.
///
/// Used by ingest (`GroupCommit`) and job completions (`CompletionCommitter`).
final class BatchWriter<Item: Sendable, Outcome: Sendable>: Sendable {
    typealias Reply = @Sendable (Result<Outcome, any Error>) -> Void

    private let queue: Queue

    /// `maxBatch` bounds one transaction, so a burst never holds the write lock for long.
    /// `writeBatch` must return one outcome per item, in order.
    /// `niceness` above 0 lowers the writer thread's priority (see `CompletionCommitter`).
    init(
        name: String, maxBatch: Int, niceness: Int32 = 0,
        writeBatch: @escaping @Sendable ([Item]) throws -> [Outcome],
        writeOne: @escaping @Sendable (Item) throws -> Outcome
    ) {
        let queue = Queue()
        self.queue = queue
        let limit = max(1, maxBatch)
        // The thread holds the queue, not this object: when the owner goes, `deinit` closes the
        // queue and the thread ends once what was queued is written.
        let thread = Thread {
            if niceness > 0 { SystemCall.setThreadNiceness(niceness) }
            queue.run(maxBatch: limit, writeBatch: writeBatch, writeOne: writeOne)
        }
        thread.name = name
        thread.start()
    }

    deinit { queue.close() }

    /// Queues `item`; `reply` runs on the writer thread once its transaction has committed
    /// (or failed), so it must be quick and must not wait on this writer.
    func enqueue(_ item: Item, reply: @escaping Reply) {
        queue.append(item, reply)
    }

    /// Queues `item` and suspends until its transaction has committed.
    func submit(_ item: Item) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            enqueue(item) { continuation.resume(with: $0) }
        }
    }

    /// Queues `item`; the returned ticket's `wait()` blocks until its transaction committed.
    func enqueue(_ item: Item) -> Ticket<Outcome> {
        let ticket = Ticket<Outcome>()
        enqueue(item) { ticket.fulfil($0) }
        return ticket
    }

    /// Sendable: `condition` guards `pending` and `closed`.
    private final class Queue: @unchecked Sendable {
        // Guards `pending` and `closed`; the writer thread sleeps on it while nothing is queued.
        private let condition = NSCondition()
        private var pending: [(Item, Reply)] = []
        private var closed = false

        func append(_ item: Item, _ reply: @escaping Reply) {
            condition.lock()
            pending.append((item, reply))
            condition.signal()
            condition.unlock()
        }

        func close() {
            condition.lock()
            closed = true
            condition.signal()
            condition.unlock()
        }

        func run(
            maxBatch: Int, writeBatch: ([Item]) throws -> [Outcome], writeOne: (Item) throws -> Outcome
        ) {
            while true {
                condition.lock()
                while pending.isEmpty && !closed { condition.wait() }
                if pending.isEmpty {
                    condition.unlock()
                    return
                }
                let batch = Array(pending.prefix(maxBatch))
                pending.removeFirst(batch.count)
                condition.unlock()
                write(batch, writeBatch, writeOne)
            }
        }

        private func write(
            _ batch: [(Item, Reply)], _ writeBatch: ([Item]) throws -> [Outcome], _ writeOne: (Item) throws -> Outcome
        ) {
            do {
                let outcomes = try writeBatch(batch.map(\.0))
                for ((_, reply), outcome) in zip(batch, outcomes) { reply(.success(outcome)) }
            } catch {
                // The whole transaction rolled back: write each item on its own, so only the
                // ones that really cannot be written are refused.
                for (item, reply) in batch {
                    reply(Result { try writeOne(item) })
                }
            }
        }
    }
}

/// One queued write's answer, for a caller on a thread of its own (a worker slot, a remote
/// worker's route on Dispatch): `wait()` blocks until the writer (or whoever holds the ticket
/// to answer) has answered. Answered once; later answers are ignored.
/// Sendable: `condition` guards `answer`.
public final class Ticket<Outcome: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var answer: Result<Outcome, any Error>?

    public init() {}

    public func fulfil(_ result: Result<Outcome, any Error>) {
        condition.lock()
        if answer == nil { answer = result }
        condition.broadcast()
        condition.unlock()
    }

    /// The outcome, or the error that kept the item from being written.
    public func wait() throws -> Outcome {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let answer { return try answer.get() }
            condition.wait()
        }
    }

    /// Whether the answer is in (`wait()` would not block).
    public var isAnswered: Bool {
        condition.lock()
        defer { condition.unlock() }
        return answer != nil
    }
}
