import Foundation

/// Stores reports from many concurrent requests in shared transactions: the ingest endpoint's
/// writer. Requests queue their reports here and wait; one writer thread takes everything
/// queued, writes it in one IMMEDIATE transaction, and answers each request. Under load a
/// transaction carries dozens of reports instead of one, and SQLite's commit work and the
/// write lock are no longer paid per report, nor on the server's two cooperative threads.
///
/// A failed batch is retried one report at a time, so one report that cannot be stored fails
/// alone. Nothing is acknowledged before its transaction commits.
public final class GroupCommit: @unchecked Sendable {
    private typealias Waiter = CheckedContinuation<SubmitOutcome, any Error>

    private let db: JobDatabase
    private let maxBatch: Int
    // Guards `pending`; the writer thread sleeps on it while nothing is queued. The thread lives
    // as long as the process: the server drains its requests before exiting, and each request
    // waits for its own commit.
    private let condition = NSCondition()
    private var pending: [(StorableReport, Waiter)] = []

    /// `maxBatch` bounds one transaction, so a burst never holds the write lock for long.
    public init(db: JobDatabase, maxBatch: Int = 256) {
        self.db = db
        self.maxBatch = maxBatch
        let thread = Thread { [self] in run() }
        thread.name = "stackline-group-commit"
        thread.start()
    }

    /// Stores `report` (deduplicated as `JobDatabase.submit` does) once its batch commits.
    public func submit(_ report: StorableReport) async throws -> SubmitOutcome {
        try await withCheckedThrowingContinuation { (waiter: Waiter) in
            condition.lock()
            pending.append((report, waiter))
            condition.signal()
            condition.unlock()
        }
    }

    private func run() {
        while true {
            condition.lock()
            while pending.isEmpty { condition.wait() }
            let batch = Array(pending.prefix(maxBatch))
            pending.removeFirst(batch.count)
            condition.unlock()
            write(batch)
        }
    }

    private func write(_ batch: [(StorableReport, Waiter)]) {
        do {
            let outcomes = try db.submit(batch.map(\.0))
            for ((_, waiter), outcome) in zip(batch, outcomes) { waiter.resume(returning: outcome) }
        } catch {
            // The whole transaction rolled back: try each report on its own, so only the ones
            // that really cannot be stored are refused.
            for (report, waiter) in batch {
                do { waiter.resume(returning: try db.submit([report])[0]) } catch { waiter.resume(throwing: error) }
            }
        }
    }
}
