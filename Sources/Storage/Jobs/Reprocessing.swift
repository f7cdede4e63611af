import Foundation
import GRDB
import ReportModel
import SQLInterface

/// Reprocessing: more jobs for reports already stored, at the lowest priority, when a debug
/// file they lacked arrives or a user asks. The writes live here, apart from the read-only
/// group queries.
extension SQLStore {
    /// Enqueues another job for an existing report at reprocessing priority.
    public func enqueueReprocessing(reportId: Int64) throws -> Int64 {
        try write { db in
            guard try db.bool("SELECT 1 FROM reports WHERE id = ?", reportId) else { throw StorageError.reportNotFound(reportId) }
            return try SQLJobQueue.insertReprocessingJob(db, reportId: reportId, now: self.now())
        }
    }

    /// Queues reprocessing (low priority) for every report that lacked one of `buildIds` and
    /// has no job queued or running; one transaction, so a report is never queued twice.
    /// A running job may have looked for these files before they were stored, so the ids are
    /// recorded against each running job too, and its completion queues the report again if
    /// its result still lacks one of them (`requeueIfArrived`). Returns the report ids queued.
    public func requeueReports(missing buildIds: [BuildID]) throws -> [Int64] {
        guard !buildIds.isEmpty else { return [] }
        let hex = Array(Set(buildIds.map(\.hex))).sorted()
        return try write { db in
            let now = self.now()
            // Rows of jobs that have since finished are no longer read: drop them here, off the
            // completion path.
            try db.execute("DELETE FROM arrivals_during_job WHERE job_id NOT IN (SELECT id FROM jobs WHERE state = 'running')")
            for id in hex {
                try db.execute(
                    "INSERT INTO arrivals_during_job (job_id, build_id) SELECT id, ? FROM jobs WHERE state = 'running' ON CONFLICT DO NOTHING",
                    id)
            }
            let ids = try db.rows(
                """
                SELECT DISTINCT m.report_id FROM missing_symbols m
                WHERE m.build_id IN (\(sqlPlaceholders(hex.count)))
                  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.report_id = m.report_id AND j.state IN ('queued', 'running'))
                ORDER BY m.report_id
                """,
                hex.map(\.sqlValue)
            ).map { try $0.int64(0) }
            for id in ids { _ = try SQLJobQueue.insertReprocessingJob(db, reportId: id, now: now) }
            return ids
        }
    }

    /// Queues reprocessing for every stored report, or those filed under group `fingerprint`
    /// (merged-in reports included), that has no job queued or running: after new grouping
    /// rules (`stackline reprocess`). One transaction; returns how many were queued.
    public func requeueReports(inGroup fingerprint: String? = nil) throws -> Int {
        try write { db in
            let now = self.now()
            let filter = fingerprint == nil ? "" : "AND r.id IN (SELECT report_id FROM results WHERE fingerprint = ?)"
            return try db.execute(
                """
                INSERT INTO jobs (report_id, state, priority, attempts, run_after, created_at, updated_at)
                SELECT r.id, 'queued', ?, 0, ?, ?, ? FROM reports r
                WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.report_id = r.id AND j.state IN ('queued', 'running'))
                \(filter)
                ORDER BY r.id
                """,
                [JobPriority.reprocessing.sqlValue, now.sqlValue, now.sqlValue, now.sqlValue] + (fingerprint.map { [.text($0)] } ?? []))
        }
    }
}

extension SQLJobQueue {
    static func insertReprocessingJob(_ db: SQLExecutor, reportId: Int64, now: Int64) throws -> Int64 {
        try db.insert(
            """
            INSERT INTO jobs (report_id, state, priority, attempts, run_after, created_at, updated_at)
            VALUES (?, 'queued', ?, 0, ?, ?, ?)
            """,
            reportId, JobPriority.reprocessing, now, now, now)
    }

    /// Called by a completion, in its transaction: when one of the build ids `missing` was
    /// stored while job `jobId` ran (see `requeueReports(missing:)`), queues the report again,
    /// unless a job for it is already queued. Returns whether it did.
    static func requeueIfArrived(_ db: SQLExecutor, jobId: Int64, reportId: Int64, missing: [MissingDebugFile], now: Int64) throws -> Bool {
        guard !missing.isEmpty else { return false }
        let ids = Array(Set(missing.map(\.buildID.hex)))
        let arrived = try db.bool(
            """
            SELECT 1 FROM arrivals_during_job WHERE job_id = ? AND build_id IN (\(sqlPlaceholders(ids.count)))
              AND NOT EXISTS (SELECT 1 FROM jobs WHERE report_id = ? AND state = 'queued')
            LIMIT 1
            """,
            [jobId.sqlValue] + ids.map(\.sqlValue) + [reportId.sqlValue])
        guard arrived else { return false }
        _ = try insertReprocessingJob(db, reportId: reportId, now: now)
        return true
    }
}
