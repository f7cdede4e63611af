import Compression
import Foundation
import ReportModel
import SQLInterface

/// What the CLI and the server read about jobs, reports and results, on either backend.
extension SQLStore {
    /// Number of jobs in each state (every state present, zero when empty).
    public func stateCounts() throws -> [JobState: Int] {
        try read { db in
            var counts = Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0, 0) })
            for row in try db.rows("SELECT state, COUNT(*) FROM jobs GROUP BY state") {
                if let state = JobState(rawValue: try row.string(0)) { counts[state] = try row.int(1) }
            }
            return counts
        }
    }

    /// The newest job of a report.
    public func jobStatus(reportId: Int64) throws -> JobStatus? {
        try read { db in
            guard let row = try db.row(
                """
                SELECT j.id, j.report_id, j.state, j.attempts, j.last_error, j.run_after, j.updated_at, r.format, r.kind
                FROM jobs j JOIN reports r ON r.id = j.report_id
                WHERE j.report_id = ? ORDER BY j.id DESC LIMIT 1
                """,
                reportId)
            else { return nil }
            return JobStatus(
                jobId: try row.int64(0), reportId: try row.int64(1), state: JobState(rawValue: try row.string(2)) ?? .failed,
                attempts: try row.int(3), lastError: try row.optionalString(4), runAfter: try row.int64(5),
                updatedAt: try row.int64(6), format: try row.string(7), kind: try row.stored(8, "kind"))
        }
    }

    /// States of the newest job of each of `reportIds` (for `submit --wait`).
    public func states(reportIds: [Int64]) throws -> [Int64: JobState] {
        try read { db in
            var states: [Int64: JobState] = [:]
            for ids in reportIds.sqlChunks {
                let rows = try db.rows(
                    """
                    SELECT report_id, state FROM jobs
                    WHERE id IN (SELECT MAX(id) FROM jobs WHERE report_id IN (\(sqlPlaceholders(ids.count))) GROUP BY report_id)
                    """,
                    ids.map(\.sqlValue))
                for row in rows { states[try row.int64(0)] = JobState(rawValue: try row.string(1)) }
            }
            return states
        }
    }

    /// A report's stored result, with the debug files its processing lacked (`missing_symbols`),
    /// in the order the result listed them.
    public func result(reportId: Int64) throws -> StoredResult? {
        let found: (SQLRow, [MissingDebugFile])? = try read { db in
            guard let row = try db.row(
                "SELECT report_id, symbolicated, symbolicated_size, status, fingerprint FROM results WHERE report_id = ?", reportId)
            else { return nil }
            let missing = try db.rows(
                db.dialect == .sqlite ? SQLJobQueue.missingInOrderSQLite : SQLJobQueue.missingInOrderPostgres, reportId
            ).map { row in MissingDebugFile(buildID: try row.storedBuildID(0, "build_id"), imageName: try row.optionalString(1)) }
            return (row, missing)
        }
        guard let (row, missing) = found else { return nil }
        let json: Data
        do { json = try Zlib.inflate(try row.data(1), limit: max(try row.int(2), 1)) } catch let error as CompressionError {
            throw StorageError.corruptStoredResult(reportId: reportId, error.description)
        }
        return StoredResult(
            reportId: try row.int64(0), symbolicatedJSON: json, status: try row.stored(3, "status"),
            missingImages: missing, fingerprint: try row.optionalString(4))
    }

    public func report(id: Int64) throws -> StoredReport? {
        guard let row = try read({ db in
            try db.row("SELECT id, format, kind, digest, raw, raw_size, received_at FROM reports WHERE id = ?", id)
        })
        else { return nil }
        return StoredReport(
            id: try row.int64(0), format: try row.string(1), kind: try row.stored(2, "kind"), digest: try row.string(3),
            raw: try SQLJobQueue.inflateStored(reportId: id, raw: try row.data(4), size: try row.int(5)), receivedAt: try row.int64(6))
    }
}

extension SQLJobQueue {
    /// A result's missing debug files in the order it listed them: SQLite's `rowid` is the
    /// insertion order (rows from before v19 have no `position`); PostgreSQL has no such order,
    /// so there it is `position`.
    static let missingInOrderSQLite = "SELECT build_id, image_name FROM missing_symbols WHERE report_id = ? ORDER BY rowid"
    static let missingInOrderPostgres = "SELECT build_id, image_name FROM missing_symbols WHERE report_id = ? ORDER BY position"
}
