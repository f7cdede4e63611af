import Foundation
import JSONFormat
import ReportModel
import SQLInterface

/// Keeps `groups`, `group_versions` (and through `GroupCounters` what else a group's pages
/// count) and `missing_symbols` exact. Runs inside the transaction
/// that stores a result, so a report is counted in exactly one group at every commit, even
/// when reprocessing moves it from one group to another.
enum GroupLedger {
    /// Moves report `reportId` from group `old` (its previous result's fingerprint) to `new`.
    /// Every join, a report's first result or the arrival end of a move, is added to `joins`,
    /// which the caller applies (`PendingJoins.apply`) at the end of its transaction; whatever
    /// else touches the groups applies them first. So the joins of a whole batch cost one update
    /// per group instead of two statements per report.
    static func move(
        _ db: SQLExecutor, reportId: Int64, member: Member, from old: String?, to new: GroupKey?, joins: inout PendingJoins
    ) throws {
        guard old != new?.fingerprint else {
            // Same group: counts stand; refresh what the newer rules say about it.
            if let new {
                try joins.apply(db)
                try refreshTitle(db, new)
            }
            return
        }
        if let old {
            // A move between groups reads and recomputes them from the result rows: the joins
            // queued so far go in first, so it sees exactly what one-by-one would have.
            try joins.apply(db)
            try leave(db, fingerprint: old, reportIds: [reportId], versions: [member.version: 1])
        }
        if let new { joins.add(reportId: reportId, group: new, app: member.app, version: member.version, seen: member.seen) }
    }

    /// What the ledger counts a report by: its app, its version ('' when none) and when it arrived.
    struct Member {
        var app: String?
        var version: String
        var seen: Int64
    }

    /// Reports joining groups, summed per group: the count, the first and last seen, the title
    /// (the last joiner's, as one update per join left it), the representative and the new row's
    /// frames (the first joiner's), and the count per app version. Applying them gives exactly
    /// what one update per join in the same order gives. Owned by one transaction.
    struct PendingJoins {
        private struct Group {
            var first: GroupKey
            var firstReportId: Int64
            var app: String?
            var title: String
            var count: Int
            var firstSeen: Int64
            var lastSeen: Int64
            /// In first-join order, so the statements run in a fixed order.
            var versions: [(version: String, count: Int)]
            var joiners: [StateTransitions.Joiner]
        }

        /// In first-join order.
        private var groups: [Group] = []
        private var index: [String: Int] = [:]
        /// The transaction's clock, for the state changes joins make (`StateTransitions`).
        let now: Int64

        init(now: Int64) { self.now = now }

        mutating func add(reportId: Int64, group key: GroupKey, app: String?, version: String, seen: Int64) {
            guard let i = index[key.fingerprint] else {
                index[key.fingerprint] = groups.count
                groups.append(Group(
                    first: key, firstReportId: reportId, app: app, title: key.title, count: 1, firstSeen: seen, lastSeen: seen,
                    versions: [(version, 1)], joiners: [.init(reportId: reportId, version: version, receivedAt: seen)]))
                return
            }
            groups[i].joiners.append(.init(reportId: reportId, version: version, receivedAt: seen))
            groups[i].title = key.title
            groups[i].count += 1
            groups[i].firstSeen = min(groups[i].firstSeen, seen)
            groups[i].lastSeen = max(groups[i].lastSeen, seen)
            if let v = groups[i].versions.firstIndex(where: { $0.version == version }) {
                groups[i].versions[v].count += 1
            } else {
                groups[i].versions.append((version, 1))
            }
        }

        private static func updateGroup(_ dialect: SQLDialect) -> String {
            """
            UPDATE groups SET
                count = count + ?, first_seen = \(dialect.least)(first_seen, ?), last_seen = \(dialect.greatest)(last_seen, ?), title = ?,
                representative_report_id = COALESCE(representative_report_id, ?)
            WHERE fingerprint = ?
            """
        }
        private static let updateGroupSQLite = updateGroup(.sqlite)
        private static let updateGroupPostgres = updateGroup(.postgres)

        /// Writes the joins added so far and forgets them.
        mutating func apply(_ db: SQLExecutor) throws {
            for group in groups {
                // Most joins are to a group that exists: update it, and encode the frames for a
                // new row only when there is none (this runs in the writer's transaction, so no
                // one else can add it in between).
                let updated = try db.execute(
                    db.dialect == .sqlite ? Self.updateGroupSQLite : Self.updateGroupPostgres,
                    group.count, group.firstSeen, group.lastSeen, group.title, group.firstReportId, group.first.fingerprint)
                if updated == 0 {
                    let frames = String(decoding: try JSONStyle.compact.encode(group.first.frames), as: UTF8.self)
                    try db.execute(
                        """
                        INSERT INTO groups (fingerprint, kind, title, rules_version, frames, app, count, first_seen, last_seen,
                                            representative_report_id)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                        group.first.fingerprint, group.first.kind.rawValue, group.title, group.first.rulesVersion,
                        frames, group.app, group.count, group.firstSeen, group.lastSeen, group.firstReportId)
                }
                for (version, count) in group.versions {
                    try db.execute(
                        """
                        INSERT INTO group_versions (fingerprint, version, count) VALUES (?, ?, ?)
                        ON CONFLICT (fingerprint, version) DO UPDATE SET count = group_versions.count + excluded.count
                        """,
                        group.first.fingerprint, version, count)
                }
                try GroupCounters.add(db, fingerprint: group.first.fingerprint, reportIds: group.joiners.map(\.reportId))
                try StateTransitions.joined(db, fingerprint: group.first.fingerprint, joiners: group.joiners, now: now)
            }
            groups.removeAll(keepingCapacity: true)
            index.removeAll(keepingCapacity: true)
        }
    }

    /// Reports `reportIds` leave group `fingerprint`: `versions` counts them per app version.
    /// Their result rows must already be gone or carry their new fingerprint; their reports
    /// must still be stored.
    private static func leave(_ db: SQLExecutor, fingerprint: String, reportIds: [Int64], versions: [String: Int]) throws {
        try GroupCounters.remove(db, fingerprint: fingerprint, reportIds: reportIds)
        for (version, n) in versions.sorted(by: { $0.key < $1.key }) {
            try db.execute("UPDATE group_versions SET count = count - ? WHERE fingerprint = ? AND version = ?", n, fingerprint, version)
        }
        try db.execute("DELETE FROM group_versions WHERE fingerprint = ? AND count <= 0", fingerprint)
        try db.execute("UPDATE groups SET count = count - ? WHERE fingerprint = ?", versions.values.reduce(0, &+), fingerprint)
        try db.execute("DELETE FROM groups WHERE fingerprint = ? AND count <= 0", fingerprint)
        // First/last seen and the representative may have been among the leavers.
        try refreshFromMembers(db, fingerprint)
    }

    /// Recomputes a group's first and last seen and, if it is no longer a member, its
    /// representative, from the members it has.
    static func refreshFromMembers(_ db: SQLExecutor, _ fingerprint: String) throws {
        try db.execute(
            """
                UPDATE groups SET
                    first_seen = (SELECT MIN(received_at) FROM results WHERE fingerprint = groups.fingerprint),
                    last_seen = (SELECT MAX(received_at) FROM results WHERE fingerprint = groups.fingerprint),
                    representative_report_id = CASE
                        WHEN EXISTS (SELECT 1 FROM results WHERE report_id = groups.representative_report_id
                                     AND fingerprint = groups.fingerprint)
                        THEN representative_report_id
                        ELSE (SELECT MIN(report_id) FROM results WHERE fingerprint = groups.fingerprint) END
                WHERE fingerprint = ?
                """,
            fingerprint)
    }

    /// Takes reports out of their groups and deletes their results (retention). One pass per
    /// group, however many of its members leave. Returns the fingerprints that lost members.
    static func removeResults(_ db: SQLExecutor, reportIds: [Int64]) throws -> [String] {
        guard !reportIds.isEmpty else { return [] }
        let marks = sqlPlaceholders(reportIds.count)
        let ids = reportIds.map(\.sqlValue)
        var leaving: [String: (ids: [Int64], versions: [String: Int])] = [:]
        for row in try db.rows(
            """
            SELECT s.fingerprint, s.report_id, COALESCE(r.version, '')
            FROM results s JOIN reports r ON r.id = s.report_id
            WHERE s.report_id IN (\(marks)) AND s.fingerprint IS NOT NULL
            """,
            ids)
        {
            let fingerprint = try row.string(0)
            leaving[fingerprint, default: ([], [:])].ids.append(try row.int64(1))
            leaving[fingerprint, default: ([], [:])].versions[try row.string(2), default: 0] += 1
        }
        try db.execute("DELETE FROM results WHERE report_id IN (\(marks))", ids)
        for (fingerprint, members) in leaving.sorted(by: { $0.key < $1.key }) {
            try leave(db, fingerprint: fingerprint, reportIds: members.ids, versions: members.versions)
        }
        return leaving.keys.sorted()
    }

    private static func refreshTitle(_ db: SQLExecutor, _ group: GroupKey) throws {
        try db.execute("UPDATE groups SET title = ? WHERE fingerprint = ?", group.title, group.fingerprint)
    }

    /// Replaces the report's missing-debug-file rows with this result's. `replacing` is false for
    /// a report's first result: its rows are only ever written with a result (and removed with
    /// it by retention), so there are none to delete.
    static func recordMissing(_ db: SQLExecutor, reportId: Int64, images: [MissingDebugFile], replacing: Bool) throws {
        if replacing {
            try db.execute("DELETE FROM missing_symbols WHERE report_id = ?", reportId)
        }
        for (position, image) in images.enumerated() {
            // The column holds only what an upload fixes; anything else is a file not found.
            let status = image.status.isFixedByUpload ? image.status : .notFound
            try db.execute(
                """
                INSERT INTO missing_symbols (report_id, build_id, image_name, status, detail, position) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT DO NOTHING
                """,
                reportId, image.buildID.hex, image.imageName, status.rawValue, image.detail, position)
        }
    }
}
