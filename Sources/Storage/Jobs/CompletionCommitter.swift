/// The master's completion writer: every worker slot and remote worker hands its finished
/// jobs here, and completions that arrive while one transaction runs are committed together
/// in the next (`BatchWriter`, the mechanism ingest's `GroupCommit` uses). Each completion
/// keeps its own fencing check: a stale one is answered `.stale` and its neighbours commit.
/// One committer per master, shared by all its slots and remote workers, so they share
/// transactions.
public final class CompletionCommitter: Sendable {
    private let writer: BatchWriter<Completion, CompletionOutcome>

    /// `maxBatch` bounds one transaction, and so how long it holds the write lock that claims
    /// and ingest also need: 64 hold it for a few milliseconds (scripts/bench-queue-store.sh
    /// measures a completion's cost).
    /// `niceness` above 0 puts the committer behind what runs at 0: `serve` gives it its
    /// workers' nice, so uploads are answered first and results wait in the queue.
    public init(store: any JobLeasing, maxBatch: Int = 64, niceness: Int32 = 0) {
        writer = BatchWriter(
            name: "stackline-completions", maxBatch: maxBatch, niceness: niceness,
            writeBatch: { try store.complete($0) },
            writeOne: { try store.complete([$0])[0] })
    }

    /// Queues a completion; `wait()` on the ticket gives its outcome once its transaction has
    /// committed (or the error that kept it from being written). `afterCommit` runs first, on
    /// the committer's thread, right after the commit: what must happen as soon as the result
    /// is durable (the "job done" log line), however late the caller collects the ticket. It
    /// must be quick and must not wait on this committer.
    public func enqueue(
        _ completion: Completion,
        afterCommit: @escaping @Sendable (Result<CompletionOutcome, any Error>) -> Void = { _ in }
    ) -> Ticket<CompletionOutcome> {
        let ticket = Ticket<CompletionOutcome>()
        writer.enqueue(completion) { result in
            afterCommit(result)
            ticket.fulfil(result)
        }
        return ticket
    }

    /// Queues a completion and waits for its outcome.
    public func complete(_ completion: Completion) throws -> CompletionOutcome {
        try enqueue(completion).wait()
    }
}
