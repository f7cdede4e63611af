import Foundation
import ReportModel
import SQLInterface

/// The few reads the web view needs beyond the CLI's queries: per-day trends (from the ledger's
/// `group_days`), the order an app's versions appeared in, and a group's first version.
extension SQLStore {
    /// Reports per UTC day for each of `fingerprints` over the `days` days ending today
    /// (oldest first); a group without reports in the window gets zeros.
    public func dailyCounts(fingerprints: [String], days: Int, now: Int64) throws -> [String: [Int]] {
        guard !fingerprints.isEmpty, days > 0 else { return [:] }
        let dayMs: Int64 = 86_400_000
        let firstDay = now / dayMs - Int64(days - 1)
        var out: [String: [Int]] = Dictionary(uniqueKeysWithValues: fingerprints.map { ($0, Array(repeating: 0, count: days)) })
        try read { db in
            let rows = try db.rows(
                "SELECT fingerprint, day, count FROM group_days WHERE fingerprint IN (\(sqlPlaceholders(fingerprints.count))) AND day >= ?",
                fingerprints.map(\.sqlValue) + [.integer(firstDay)])
            for row in rows {
                let day = try row.int64(1)
                let index = Int(day - firstDay)
                if index >= 0, index < days { out[try row.string(0)]?[index] = try row.int(2) }
            }
        }
        return out
    }

    /// Reports per version of one app's groups of `kind`, as the regression alert counts them,
    /// so the page's regression flag and the alert agree.
    public func appVersionCounts(app: String?, kind: ReportKind) throws -> [String: Int] {
        try read { db in try AlertFacts(db: db).appVersionCounts(app: app, kind: kind) }
    }

    /// The version of the oldest report filed under `fingerprint` ("" when it had none).
    public func firstVersion(fingerprint: String) throws -> String? {
        try read { db in
            try db.string(
                """
                SELECT COALESCE(r.version, '') FROM results s JOIN reports r ON r.id = s.report_id
                WHERE s.fingerprint = ? ORDER BY s.received_at, s.report_id LIMIT 1
                """,
                fingerprint)
        }
    }
}
