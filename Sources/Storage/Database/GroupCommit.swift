import Foundation

/// Stores reports from many concurrent requests in shared transactions: the ingest endpoint's
/// writer. Requests queue their reports here and wait; one writer thread takes everything
/// queued, writes it in one IMMEDIATE transaction, and answers each request. Under load a
/// transaction carries dozens of reports instead of one, and SQLite's commit work and the
/// write lock are no longer paid per report, nor on the server's two cooperative threads.
///
/// A failed batch is retried one report at a time, so one report that cannot be stored fails
/// alone. Nothing is acknowledged before its transaction commits. The batching itself is
/// `BatchWriter`, shared with the master's job completions (`CompletionCommitter`).
public final class GroupCommit: Sendable {
    private let writer: BatchWriter<StorableReport, SubmitOutcome>

    /// `maxBatch` bounds one transaction, so a burst never holds the write lock for long.
    public init(db: any SQLStore, maxBatch: Int = 256) {
        writer = BatchWriter(
            name: "stackline-group-commit", maxBatch: maxBatch,
            writeBatch: { try db.submit($0) },
            writeOne: { try db.submit([$0])[0] })
    }

    /// Stores `report` (deduplicated as `ServiceDatabase.submit` does) once its batch commits.
    public func submit(_ report: StorableReport) async throws -> SubmitOutcome {
        try await writer.submit(report)
    }
}
