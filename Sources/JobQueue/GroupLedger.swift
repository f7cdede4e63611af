import Foundation
import GRDB
import ReportModel

/// Keeps `groups`, `group_versions` and `missing_symbols` exact. Runs inside the transaction
/// that stores a result, so a report is counted in exactly one group at every commit, even
/// when reprocessing moves it from one group to another.
enum GroupLedger {
    /// Moves report `reportId` from group `old` (its previous result's fingerprint) to `new`.
    static func move(_ db: Database, reportId: Int64, from old: String?, to new: GroupKey?) throws {
        guard old != new?.fingerprint else {
            // Same group: counts stand; refresh what the newer rules say about it.
            if let new { try refreshTitle(db, new) }
            return
        }
        let member = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT app, COALESCE(version, '') AS version, received_at FROM reports WHERE id = ?"),
            arguments: [reportId])
        let version: String = member?["version"] ?? ""
        let seen: Int64 = member?["received_at"] ?? 0
        if let old { try leave(db, fingerprint: old, versions: [version: 1]) }
        if let new { try join(db, reportId: reportId, group: new, app: member?["app"], version: version, seen: seen) }
    }

    private static func join(
        _ db: Database, reportId: Int64, group: GroupKey, app: String?, version: String, seen: Int64
    ) throws {
        // Most results join a group that exists: update it, and encode the frames for a new
        // row only when there is none (this runs in the writer's transaction, so no one else
        // can add it in between).
        try db.cachedStatement(
            sql: """
                UPDATE groups SET
                    count = count + 1, first_seen = MIN(first_seen, ?), last_seen = MAX(last_seen, ?), title = ?,
                    representative_report_id = COALESCE(representative_report_id, ?)
                WHERE fingerprint = ?
                """
        ).execute(arguments: [seen, seen, group.title, reportId, group.fingerprint])
        if db.changesCount == 0 {
            let frames = String(decoding: try JSONEncoder().encode(group.frames), as: UTF8.self)
            try db.execute(
                sql: """
                    INSERT INTO groups (fingerprint, kind, title, rules_version, frames, app, count, first_seen, last_seen,
                                        representative_report_id)
                    VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)
                    """,
                arguments: [group.fingerprint, group.kind.rawValue, group.title, group.rulesVersion, frames, app, seen, seen,
                            reportId])
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO group_versions (fingerprint, version, count) VALUES (?, ?, 1)
                ON CONFLICT (fingerprint, version) DO UPDATE SET count = count + 1
                """
        ).execute(arguments: [group.fingerprint, version])
    }

    /// Reports leave group `fingerprint`: `versions` counts them per app version. Their result
    /// rows must already be gone or carry their new fingerprint.
    private static func leave(_ db: Database, fingerprint: String, versions: [String: Int]) throws {
        for (version, n) in versions {
            try db.execute(
                sql: "UPDATE group_versions SET count = count - ? WHERE fingerprint = ? AND version = ?",
                arguments: [n, fingerprint, version])
        }
        try db.execute(
            sql: "DELETE FROM group_versions WHERE fingerprint = ? AND count <= 0", arguments: [fingerprint])
        try db.execute(
            sql: "UPDATE groups SET count = count - ? WHERE fingerprint = ?",
            arguments: [versions.values.reduce(0, +), fingerprint])
        try db.execute(sql: "DELETE FROM groups WHERE fingerprint = ? AND count <= 0", arguments: [fingerprint])
        // First/last seen and the representative may have been among the leavers: recompute
        // them from the members that remain.
        try db.execute(
            sql: """
                UPDATE groups SET
                    first_seen = (SELECT MIN(r.received_at) FROM results s JOIN reports r ON r.id = s.report_id
                                  WHERE s.fingerprint = groups.fingerprint),
                    last_seen = (SELECT MAX(r.received_at) FROM results s JOIN reports r ON r.id = s.report_id
                                 WHERE s.fingerprint = groups.fingerprint),
                    representative_report_id = CASE
                        WHEN EXISTS (SELECT 1 FROM results WHERE report_id = groups.representative_report_id
                                     AND fingerprint = groups.fingerprint)
                        THEN representative_report_id
                        ELSE (SELECT MIN(report_id) FROM results WHERE fingerprint = groups.fingerprint) END
                WHERE fingerprint = ?
                """,
            arguments: [fingerprint])
    }

    /// Takes reports out of their groups and deletes their results (retention). One pass per
    /// group, however many of its members leave. Returns the fingerprints that lost members.
    static func removeResults(_ db: Database, reportIds: [Int64]) throws -> [String] {
        guard !reportIds.isEmpty else { return [] }
        let marks = databaseQuestionMarks(count: reportIds.count)
        var leaving: [String: [String: Int]] = [:]
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT s.fingerprint, COALESCE(r.version, '') AS version, COUNT(*) AS n
                FROM results s JOIN reports r ON r.id = s.report_id
                WHERE s.report_id IN (\(marks)) AND s.fingerprint IS NOT NULL
                GROUP BY s.fingerprint, version
                """,
            arguments: StatementArguments(reportIds))
        {
            leaving[row["fingerprint"], default: [:]][row["version"]] = row["n"]
        }
        try db.execute(sql: "DELETE FROM results WHERE report_id IN (\(marks))", arguments: StatementArguments(reportIds))
        for (fingerprint, versions) in leaving.sorted(by: { $0.key < $1.key }) {
            try leave(db, fingerprint: fingerprint, versions: versions)
        }
        return leaving.keys.sorted()
    }

    private static func refreshTitle(_ db: Database, _ group: GroupKey) throws {
        try db.cachedStatement(sql: "UPDATE groups SET title = ? WHERE fingerprint = ?")
            .execute(arguments: [group.title, group.fingerprint])
    }

    /// Replaces the report's missing-debug-file rows with this result's.
    static func recordMissing(_ db: Database, reportId: Int64, images: [MissingImage]) throws {
        try db.cachedStatement(sql: "DELETE FROM missing_symbols WHERE report_id = ?").execute(arguments: [reportId])
        guard !images.isEmpty else { return }
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO missing_symbols (report_id, build_id, image_name) VALUES (?, ?, ?)")
        for image in images {
            try insert.execute(arguments: [reportId, image.buildId, image.name])
        }
    }
}
