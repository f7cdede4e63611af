import Foundation
import JSONFormat
import ReportModel
import SQLInterface

/// What the ledger does to a group's state when reports join it, in the transaction that files
/// them: a resolved group that gets a report of a version at or after its resolution reopens
/// (`regressed`), and an ignored group whose condition has passed wakes. Nothing else changes
/// a state without a person asking.
enum StateTransitions {
    /// A report joining a group: its id, its app version ('' when none) and when it arrived.
    struct Joiner {
        var reportId: Int64
        var version: String
        var receivedAt: Int64
    }

    /// Looks at the group's state (most groups have none: one indexed lookup) and applies
    /// what `joiners` change.
    static func joined(_ db: SQLExecutor, fingerprint: String, joiners: [Joiner], now: Int64) throws {
        guard let row = try db.row("SELECT \(GroupTriage.columns) FROM group_states WHERE fingerprint = ? AND state != 'open'", fingerprint)
        else { return }
        let triage = try GroupTriage(row)
        let changedAt = triage.changedAt ?? 0
        // Reports that arrived before the change are what the person saw when making it, even
        // when they are filed only now (reprocessing): they never end it.
        let fresh = joiners.filter { $0.receivedAt > changedAt }
        guard !fresh.isEmpty else { return }
        switch triage.state {
        case .open:
            return
        case .resolved:
            guard let first = fresh.first(where: { reopens(triage, version: $0.version) }) else { return }
            try db.execute(
                """
                UPDATE group_states SET state = 'open', resolution = NULL, resolved_version = NULL, changed_at = ?,
                    regressed_version = ?, regressed_at = ?
                WHERE fingerprint = ?
                """,
                now, first.version, now, fingerprint)
            var detail = ["version": first.version]
            if let resolved = triage.resolvedVersion { detail["resolvedVersion"] = resolved }
            if let resolution = triage.resolution { detail["resolution"] = resolution.rawValue }
            try GroupHistory.record(
                db, fingerprint: fingerprint, at: now, actor: GroupHistoryEntry.automatic, action: "regressed", detail: detail,
                reportId: first.reportId)
        case .ignored:
            let seen = triage.ignoreReportsSeen.saturatingAdding(fresh.count)
            var reason: String?
            if let until = triage.ignoreUntil, now >= until {
                reason = "time"
            } else if let reports = triage.ignoreReports, seen >= reports {
                reason = "reports"
            } else if let users = triage.ignoreUsers, try Self.users(db, fingerprint: fingerprint, after: changedAt) >= users {
                reason = "users"
            }
            guard let reason else {
                try db.execute("UPDATE group_states SET ignore_reports_seen = ? WHERE fingerprint = ?", seen, fingerprint)
                return
            }
            try db.execute(
                """
                UPDATE group_states SET state = 'open', ignore_until = NULL, ignore_reports = NULL, ignore_users = NULL,
                    ignore_reports_seen = 0, changed_at = ?
                WHERE fingerprint = ?
                """,
                now, fingerprint)
            try GroupHistory.record(
                db, fingerprint: fingerprint, at: now, actor: GroupHistoryEntry.automatic, action: "woke",
                detail: ["reason": reason, "reports": String(seen)], reportId: fresh.last?.reportId)
        }
    }

    /// True when a report of `version` reopens a group resolved as `triage` says. A report
    /// without a version cannot be placed after a resolution version, so it reopens only a
    /// group resolved without one.
    static func reopens(_ triage: GroupTriage, version: String) -> Bool {
        guard let resolved = triage.resolvedVersion else { return true }
        guard !version.isEmpty else { return false }
        let order = VersionOrder.compare(version, resolved)
        return triage.resolution == .nextVersion ? order > 0 : order >= 0
    }

    /// Distinct users (SDK `user_id`, else `device_id`, else the report's own device key) of a group's reports received in
    /// `(after, upTo]`, of one version when `version` is given: an ignore until N more users,
    /// and the velocity alert, count the same way.
    static func users(_ db: SQLExecutor, fingerprint: String, version: String? = nil, after: Int64, upTo: Int64 = .max) throws -> Int {
        // The version is cast so that PostgreSQL knows its type when it is NULL.
        try db.int(
            """
            SELECT COUNT(DISTINCT \(ReportIdentitySQL.userKey)) FROM results s
            JOIN reports r ON r.id = s.report_id LEFT JOIN report_sessions rs ON rs.report_id = s.report_id
            WHERE s.fingerprint = ? AND (CAST(? AS TEXT) IS NULL OR COALESCE(r.version, '') = ?) AND r.received_at > ? AND r.received_at <= ?
            """,
            fingerprint, version, version, after, upTo) ?? 0
    }
}

/// The history rows: written here and nowhere else.
enum GroupHistory {
    /// Returns the entry's id.
    @discardableResult
    static func record(
        _ db: SQLExecutor, fingerprint: String, at: Int64, actor: String, action: String, detail: [String: String] = [:],
        note: String? = nil, reportId: Int64? = nil
    ) throws -> Int64 {
        let detailJSON = detail.isEmpty ? nil : String(decoding: try JSONStyle.compact.encode(detail), as: UTF8.self)
        return try db.insert(
            "INSERT INTO group_history (fingerprint, at, actor, action, detail, note, report_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
            fingerprint, at, actor, action, detailJSON, note, reportId)
    }

    /// The columns `entry` reads.
    static let columns = "id, fingerprint, at, actor, action, detail, note, report_id"

    static func entry(_ row: SQLRow) throws -> GroupHistoryEntry {
        let detail = try row.optionalString(5).flatMap { try? JSONDecoder().decode([String: String].self, from: Data($0.utf8)) }
        return GroupHistoryEntry(
            id: try row.int64(0), fingerprint: try row.string(1), at: try row.int64(2), actor: try row.string(3),
            action: try row.string(4), detail: detail ?? [:], note: try row.optionalString(6), reportId: try row.optionalInt64(7))
    }
}
