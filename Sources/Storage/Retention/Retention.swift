import Foundation
import GRDB
import SQLInterface

/// Which reports `prune` deletes.
public struct PruneRequest: Sendable {
    /// Reports received before this time (ms since the epoch) are deleted.
    public var receivedBefore: Int64
    /// Keep every group's representative report, so no group disappears or loses its example.
    public var keepGroups: Bool
    /// How freed pages are handed back to the file system.
    public var reclaim: ReclaimPolicy
    /// Reports deleted per write transaction; bounds how long a running master waits for the lock.
    public var batchSize: Int

    public init(receivedBefore: Int64, keepGroups: Bool = false, reclaim: ReclaimPolicy = .convertIfNeeded, batchSize: Int = 500) {
        self.receivedBefore = receivedBefore
        self.keepGroups = keepGroups
        self.reclaim = reclaim
        self.batchSize = max(1, batchSize)
    }
}

/// How `prune` reclaims space after deleting.
public enum ReclaimPolicy: Sendable {
    /// `PRAGMA incremental_vacuum` when the database allows it; otherwise one full `VACUUM`,
    /// which also switches the file to incremental auto-vacuum so later prunes are cheap.
    case convertIfNeeded
    /// Only `PRAGMA incremental_vacuum`; a database without incremental auto-vacuum keeps its
    /// free pages (a full `VACUUM` rewrites the file under the write lock, too long for a running master).
    case incrementalOnly
}

/// How space was reclaimed.
public enum VacuumMethod: String, Sendable, Codable {
    /// `PRAGMA incremental_vacuum`: the free pages were cut off the end of the file.
    case incremental = "incremental vacuum"
    /// `VACUUM` (the database had no incremental auto-vacuum; it has from now on).
    case full = "VACUUM"
    /// Nothing was reclaimed: the database has no incremental auto-vacuum and a full one was not allowed.
    case none
}

/// What `prune` did.
public struct PruneOutcome: Sendable, Codable, Equatable {
    public var receivedBefore: Int64
    public var reportsDeleted = 0
    public var jobsDeleted = 0
    public var resultsDeleted = 0
    public var missingSymbolsDeleted = 0
    /// Groups all of whose members were deleted (they are gone).
    public var groupsDeleted = 0
    /// Groups that lost members and remain.
    public var groupsUpdated = 0
    /// Old reports kept because a job of theirs is queued or running.
    public var keptActive = 0
    /// Old reports kept as their group's representative (`keepGroups`).
    public var keptRepresentatives = 0
    /// Alert events raised before the cutoff, with their deliveries (none still pending).
    public var alertEventsDeleted = 0
    /// Session counter rows of UTC days that ended before the cutoff (release health keeps the
    /// days it has reports for; docs/releases.md).
    public var sessionCounterRowsDeleted = 0
    public var vacuum = VacuumMethod.none
    /// `page_count × page_size` before deleting and after reclaiming.
    public var bytesBefore: Int64 = 0
    public var bytesAfter: Int64 = 0
}

extension SQLStore {
    /// Deletes reports received before `request.receivedBefore` with their jobs, results and
    /// `missing_symbols` rows (and alert events raised before then, and the launch counters of
    /// the days that ended before then), moving them out of their groups through `GroupLedger` in the same
    /// transaction, so every group's count, versions, first/last seen and representative stay
    /// exact at every commit. A report with a queued or running job is never deleted. Then
    /// reclaims the freed pages.
    public func prune(_ request: PruneRequest) throws -> PruneOutcome {
        var outcome = PruneOutcome(receivedBefore: request.receivedBefore)
        outcome.bytesBefore = try databaseBytes()
        let keep = request.keepGroups
            ? "AND r.id NOT IN (SELECT representative_report_id FROM groups WHERE representative_report_id IS NOT NULL)"
            : ""
        var after: Int64 = 0
        var touched = Set<String>()
        while true {
            let batchDone: Bool = try write { db in
                // Locked, so a job queued for one of them on another node waits for this batch
                // and then finds its report gone (PostgreSQL), instead of being deleted under it.
                let ids = try db.rows(
                    """
                    SELECT r.id FROM reports r
                    WHERE r.received_at < ? AND r.id > ?
                      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.report_id = r.id AND j.state IN ('queued', 'running'))
                      \(keep)
                    ORDER BY r.id LIMIT ?\(db.dialect.forUpdate)
                    """,
                    request.receivedBefore, after, request.batchSize
                ).map { try $0.int64(0) }
                guard let last = ids.last else { return true }
                after = last
                let marks = sqlPlaceholders(ids.count)
                let arguments = ids.map(\.sqlValue)
                outcome.resultsDeleted += try db.int("SELECT COUNT(*) FROM results WHERE report_id IN (\(marks))", arguments) ?? 0
                touched.formUnion(try GroupLedger.removeResults(db, reportIds: ids))
                outcome.missingSymbolsDeleted += try db.execute("DELETE FROM missing_symbols WHERE report_id IN (\(marks))", arguments)
                outcome.jobsDeleted += try db.execute("DELETE FROM jobs WHERE report_id IN (\(marks))", arguments)
                outcome.reportsDeleted += try db.execute("DELETE FROM reports WHERE id IN (\(marks))", arguments)
                return ids.count < request.batchSize
            }
            if batchDone { break }
        }
        // Alert events only keep the rules from sending one twice, and the cursor has passed
        // everything they were raised for; one still being delivered stays until it is done.
        outcome.alertEventsDeleted = try write { db in
            let stale = """
                SELECT e.id FROM alert_events e WHERE e.created_at < ?
                  AND NOT EXISTS (SELECT 1 FROM alert_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')
                """
            try db.execute("DELETE FROM alert_deliveries WHERE event_id IN (\(stale))", request.receivedBefore)
            return try db.execute("DELETE FROM alert_events WHERE id IN (\(stale))", request.receivedBefore)
        }
        // Launch counters go by whole UTC days: a day is dropped once it ended before the cutoff,
        // so the oldest day kept is never counted in part.
        let firstKeptDay = max(0, request.receivedBefore) / SessionCounters.dayMs
        outcome.sessionCounterRowsDeleted = try write { db in
            try db.execute("DELETE FROM session_counters WHERE day < ?", firstKeptDay)
        }
        // A source's answer is shown only beside a report that lacks the file.
        try pruneSourceAnswers()
        try read { db in
            // Counted at the end, so a group that lost members in one batch and was emptied
            // in a later one counts once, as deleted.
            let fingerprints = Array(touched)
            for chunk in fingerprints.sqlChunks {
                outcome.groupsUpdated += try db.int(
                    "SELECT COUNT(*) FROM groups WHERE fingerprint IN (\(sqlPlaceholders(chunk.count)))", chunk.map(\.sqlValue)) ?? 0
            }
            outcome.groupsDeleted = fingerprints.count - outcome.groupsUpdated
            outcome.keptActive = try db.int(
                """
                SELECT COUNT(*) FROM reports r WHERE r.received_at < ?
                  AND EXISTS (SELECT 1 FROM jobs j WHERE j.report_id = r.id AND j.state IN ('queued', 'running'))
                """,
                request.receivedBefore) ?? 0
            outcome.keptRepresentatives = keep.isEmpty ? 0 : try db.int(
                """
                SELECT COUNT(*) FROM reports r WHERE r.received_at < ?
                  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.report_id = r.id AND j.state IN ('queued', 'running'))
                  AND r.id IN (SELECT representative_report_id FROM groups)
                """,
                request.receivedBefore) ?? 0
        }
        outcome.vacuum = try reclaimSpace(request.reclaim)
        outcome.bytesAfter = try databaseBytes()
        return outcome
    }
}

extension ServiceDatabase {
    /// Hands free pages back to the file system and checkpoints the WAL into the main file.
    public func reclaimSpace(_ policy: ReclaimPolicy) throws -> VacuumMethod {
        let method: VacuumMethod = try pool.writeWithoutTransaction { db in
            let mode = try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0
            if mode == 2 {
                try db.execute(sql: "PRAGMA incremental_vacuum")
                return .incremental
            }
            guard policy == .convertIfNeeded else { return .none }
            // Setting the mode takes effect with the VACUUM that rewrites the file.
            try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
            try db.execute(sql: "VACUUM")
            return .full
        }
        // Moves the vacuumed pages out of the WAL so the main file actually shrinks; a reader
        // still holding an old snapshot only delays that to a later checkpoint.
        _ = try pool.writeWithoutTransaction { try Row.fetchOne($0, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        return method
    }

    /// `page_count × page_size`: the database's size as SQLite sees it, WAL included.
    public func databaseBytes() throws -> Int64 {
        try pool.read { db in
            let pages = try Int64.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            let size = try Int64.fetchOne(db, sql: "PRAGMA page_size") ?? 0
            return pages * size
        }
    }
}
