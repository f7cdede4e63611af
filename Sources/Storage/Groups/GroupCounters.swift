import Foundation
import ReportQuery
import SQLInterface

/// What a group's pages and filtered lists show besides its reports per version
/// (`group_versions.count`): its reports per UTC day, whole (`group_days`) and per app version
/// (`group_version_days`), its reports per value of the facets its page shows
/// (`group_facets`), and its distinct users and sessions, whole (`groups`) and per app version
/// (`group_versions`). Kept in the transaction that files or unfiles a report, as the
/// ledger keeps the report counts, so a page reads a few rows however many reports the group
/// has (issue 33 §5). `db check` holds every one of them to the reports.
///
/// A distinct count is kept through a membership table: one row per (group, user) (or
/// session; per version too) with how many of the group's reports it has. A row that appears
/// adds one to the count, a row whose reports reach zero is deleted and takes one away, so a
/// move, a merge or retention leaves the count exact. Each row also keeps the arrival of its
/// member's last report in the group (`last_at`): the distinct users or sessions since a time
/// are the rows with `last_at` at or after it, counted from an index instead of from every
/// report in the window (`CountedGroupFilter`, a list filtered by `since`).
enum GroupCounters {
    /// One distinct count: its membership table, the table's key column, whether it is per
    /// version, and the column of `groups` or `group_versions` that holds the count.
    private struct Distinct {
        let table: String
        let key: String
        let perVersion: Bool
        let counter: String
        /// The member's key, as SQL over `reports r LEFT JOIN report_sessions rs`, and where
        /// `change`'s query reads it.
        let value: String
        let column: Int
    }

    private static let distincts = [
        Distinct(table: "group_users", key: "user_key", perVersion: false, counter: "users", value: ReportIdentitySQL.userKey, column: 2),
        Distinct(table: "group_sessions", key: "session_id", perVersion: false, counter: "sessions", value: "rs.session_id", column: 3),
        Distinct(
            table: "group_version_users", key: "user_key", perVersion: true, counter: "users", value: ReportIdentitySQL.userKey, column: 2),
        Distinct(
            table: "group_version_sessions", key: "session_id", perVersion: true, counter: "sessions", value: "rs.session_id", column: 3),
    ]

    /// The facets a group's page shows, counted per value (`group_facets`), each with its SQL
    /// as search reads it (`QuerySQL.column`) and where `change`'s query reads it.
    static let facets: [(field: Field, value: String, column: Int)] = [Field.osVersion, .deviceModel, .version].enumerated().compactMap {
        guard let value = QuerySQL.column($0.element) else { return nil }
        return ($0.element, value, 4 + $0.offset)
    }

    /// The UTC day a time falls in, as `group_days` counts reports (SQL's integer division,
    /// which truncates as Swift's does).
    static func day(of time: Int64) -> Int64 { time / SessionCounters.dayMs }

    /// Reports `reportIds` joined group `fingerprint`, whose row and version rows exist.
    static func add(_ db: SQLExecutor, fingerprint: String, reportIds: [Int64]) throws {
        try change(db, fingerprint: fingerprint, reportIds: reportIds, by: 1)
    }

    /// Reports `reportIds` left group `fingerprint` (their reports still stored).
    static func remove(_ db: SQLExecutor, fingerprint: String, reportIds: [Int64]) throws {
        try change(db, fingerprint: fingerprint, reportIds: reportIds, by: -1)
    }

    /// A count's row within a group: the app version ("" where the count is the whole group's)
    /// and a day or a member's key.
    private struct Cell: Hashable, Comparable {
        var version: String
        var key: String
        static func < (a: Cell, b: Cell) -> Bool { (a.version, a.key) < (b.version, b.key) }
    }

    /// A member's reports among those added or removed, and the last one's arrival.
    private struct Member {
        var reports = 0
        var last = Int64.min

        mutating func add(_ arrival: Int64) {
            reports += 1
            last = max(last, arrival)
        }
    }

    private static func change(_ db: SQLExecutor, fingerprint: String, reportIds: [Int64], by sign: Int) throws {
        guard !reportIds.isEmpty else { return }
        var days: [Int64: Int] = [:]
        var versionDays: [String: [Int64: Int]] = [:]
        var members: [[Cell: Member]] = Array(repeating: [:], count: distincts.count)
        /// Per facet, per value (nil: none).
        var facetValues: [[String?: Int]] = Array(repeating: [:], count: facets.count)
        for chunk in reportIds.sqlChunks {
            let rows = try db.rows(
                """
                SELECT COALESCE(r.version, ''), r.received_at, \(ReportIdentitySQL.userKey), rs.session_id,
                    \(facets.map(\.value).joined(separator: ", "))
                FROM reports r LEFT JOIN report_sessions rs ON rs.report_id = r.id
                WHERE r.id IN (\(sqlPlaceholders(chunk.count)))
                """,
                chunk.map(\.sqlValue))
            for row in rows {
                let version = try row.string(0)
                let receivedAt = try row.int64(1)
                let arrival = day(of: receivedAt)
                days[arrival, default: 0] += 1
                versionDays[version, default: [:]][arrival, default: 0] += 1
                for (i, d) in distincts.enumerated() {
                    guard let key = try row.optionalString(d.column) else { continue }
                    members[i][Cell(version: d.perVersion ? version : "", key: key), default: Member()].add(receivedAt)
                }
                for (i, facet) in facets.enumerated() {
                    facetValues[i][try row.optionalString(facet.column), default: 0] += 1
                }
            }
        }
        for (day, n) in days.sorted(by: { $0.key < $1.key }) {
            try bump(db, "group_days", where: [("fingerprint", fingerprint), ("day", day)], column: "count", by: sign * n)
        }
        for (version, byDay) in versionDays.sorted(by: { $0.key < $1.key }) {
            for (day, n) in byDay.sorted(by: { $0.key < $1.key }) {
                try bump(
                    db, "group_version_days", where: [("version", version), ("day", day), ("fingerprint", fingerprint)], column: "count",
                    by: sign * n)
            }
        }
        for (i, facet) in facets.enumerated() {
            for (value, n) in facetValues[i].sorted(by: { ($0.key ?? "") < ($1.key ?? "") }) {
                try bump(
                    db, "group_facets",
                    where: [("fingerprint", fingerprint), ("facet", facet.field.description), ("named", value != nil), ("value", value ?? "")],
                    column: "count", by: sign * n)
            }
        }
        let removed = sign < 0 ? Set(reportIds) : []
        for (i, d) in distincts.enumerated() {
            // Members that appeared (or, removing, disappeared), per version.
            var changed: [String: Int] = [:]
            for (cell, member) in members[i].sorted(by: { $0.key < $1.key }) {
                if try bumpMember(db, d, fingerprint: fingerprint, cell, member, by: sign, removed: removed) {
                    changed[cell.version, default: 0] += 1
                }
            }
            for (version, n) in changed.sorted(by: { $0.key < $1.key }) {
                if d.perVersion {
                    try db.execute(
                        "UPDATE group_versions SET \(d.counter) = \(d.counter) + ? WHERE fingerprint = ? AND version = ?",
                        sign * n, fingerprint, version)
                } else {
                    try db.execute("UPDATE groups SET \(d.counter) = \(d.counter) + ? WHERE fingerprint = ?", sign * n, fingerprint)
                }
            }
        }
    }

    /// Adds `n` to `column` of the row of `table` that `key` names, creating it when `n` is
    /// positive and deleting it when its count reaches zero. `last`, for a membership table: the
    /// latest arrival among the reports added or removed; adding keeps the greater `last_at`.
    /// Returns whether the row appeared or disappeared, and the `last_at` of a row a removal left.
    @discardableResult
    private static func bump(
        _ db: SQLExecutor, _ table: String, where key: [(String, SQLBindable)], column: String, by n: Int, last: Int64? = nil
    ) throws -> (changed: Bool, lastAt: Int64?) {
        let names = key.map { $0.0 }
        let (match, values) = rowCondition(key)
        let lastColumn = last == nil ? "" : ", last_at"
        if n > 0 {
            let keepLast = last == nil ? "" : ", last_at = \(db.dialect.greatest)(\(table).last_at, excluded.last_at)"
            let now = try db.rows(
                """
                INSERT INTO \(table) (\(names.joined(separator: ", ")), \(column)\(lastColumn))
                VALUES (\(sqlPlaceholders(names.count + (last == nil ? 1 : 2))))
                ON CONFLICT (\(names.joined(separator: ", "))) DO UPDATE SET \(column) = \(table).\(column) + excluded.\(column)\(keepLast)
                RETURNING \(column)
                """,
                values + [n.sqlValue] + (last.map { [$0.sqlValue] } ?? [])
            ).first?.optionalInt(0)
            return (now == n, nil)
        }
        guard let row = try db.rows(
            "UPDATE \(table) SET \(column) = \(column) + ? WHERE \(match) RETURNING \(column)\(lastColumn)", [n.sqlValue] + values
        ).first else { return (false, nil) }
        guard let left = try row.optionalInt(0), left <= 0 else { return (false, last == nil ? nil : try row.optionalInt64(1)) }
        try db.execute("DELETE FROM \(table) WHERE \(match)", values)
        return (true, nil)
    }

    /// The condition naming the row `key` names, and its arguments.
    private static func rowCondition(_ key: [(String, SQLBindable)]) -> (sql: String, values: [SQLValue]) {
        (key.map { "\($0.0) = ?" }.joined(separator: " AND "), key.map { $0.1.sqlValue })
    }

    /// Adds (`sign` 1) or removes (-1) `member`'s reports to or from its row of `d`'s table
    /// (`bump`). When a removal takes the row's last report while others stay, its `last_at`
    /// becomes the arrival of the latest report still filed that is not among `removed` (which
    /// may still be filed: a report whose identity changes leaves its old member before its row
    /// changes). Returns whether the row appeared or disappeared.
    private static func bumpMember(
        _ db: SQLExecutor, _ d: Distinct, fingerprint: String, _ cell: Cell, _ member: Member, by sign: Int, removed: Set<Int64>
    ) throws -> Bool {
        let key: [(String, SQLBindable)] = d.perVersion
            ? [("fingerprint", fingerprint), ("version", cell.version), (d.key, cell.key)]
            : [("fingerprint", fingerprint), (d.key, cell.key)]
        let (changed, lastAt) = try bump(db, d.table, where: key, column: "reports", by: sign * member.reports, last: member.last)
        guard let lastAt, member.last >= lastAt else { return changed }
        // The member's newest reports in the group, walked along the arrival index: among the
        // first `member.reports + 1` at least one is not a removed one.
        var sql = """
            SELECT s.received_at AS at, s.report_id AS id FROM results s JOIN reports r ON r.id = s.report_id
            LEFT JOIN report_sessions rs ON rs.report_id = s.report_id
            WHERE s.fingerprint = ? AND \(d.value) = ?
            """
        var arguments: [SQLValue] = [.text(fingerprint), .text(cell.key)]
        if d.perVersion {
            sql += " AND COALESCE(r.version, '') = ?"
            arguments.append(.text(cell.version))
        }
        sql += " ORDER BY s.received_at DESC LIMIT ?"
        arguments.append(.integer(Int64(member.reports) + 1))
        if let latest = try db.rows(sql, arguments).first(where: { !removed.contains(try $0.int64("id")) }) {
            let (match, values) = rowCondition(key)
            try db.execute("UPDATE \(d.table) SET last_at = ? WHERE \(match)", [.integer(try latest.int64("at"))] + values)
        }
        return changed
    }

    /// Recounts everything here for group `fingerprint` (every group when nil) from the results
    /// filed under it: what a merge and an unmerge do. The group's row and version rows must
    /// already hold its members' reports.
    static func rebuild(_ db: SQLExecutor, fingerprint: String?) throws {
        try rebuildCounts(db, fingerprint: fingerprint)
        try rebuildMembers(db, fingerprint: fingerprint)
    }

    /// The results filed under group `fingerprint` (every group's when nil), as a recount reads
    /// them: the statement's `FROM … WHERE`, the filter on a table keyed by fingerprint, and
    /// the arguments of each.
    private static func scope(_ fingerprint: String?) -> (members: String, only: String, arguments: [SQLValue]) {
        let members = """
            FROM results s JOIN reports r ON r.id = s.report_id LEFT JOIN report_sessions rs ON rs.report_id = s.report_id
            WHERE \(fingerprint == nil ? "s.fingerprint IS NOT NULL" : "s.fingerprint = ?")
            """
        return (members, fingerprint == nil ? "" : " WHERE fingerprint = ?", fingerprint.map { [.text($0)] } ?? [])
    }

    /// Recounts the reports per day, per version and day, and per facet value (`rebuild` without
    /// the memberships): the v17 migration, whose membership tables v22 fills once they have
    /// `last_at`.
    static func rebuildCounts(_ db: SQLExecutor, fingerprint: String?) throws {
        let (members, only, arguments) = scope(fingerprint)
        let day = "r.received_at / \(SessionCounters.dayMs)"
        try db.execute("DELETE FROM group_days" + only, arguments)
        try db.execute(
            "INSERT INTO group_days (fingerprint, day, count) SELECT s.fingerprint, \(day), COUNT(*) \(members) GROUP BY 1, 2",
            arguments)
        try db.execute("DELETE FROM group_version_days" + only, arguments)
        try db.execute(
            """
            INSERT INTO group_version_days (version, day, fingerprint, count)
            SELECT COALESCE(r.version, ''), \(day), s.fingerprint, COUNT(*) \(members) GROUP BY 1, 2, 3
            """,
            arguments)
        try db.execute("DELETE FROM group_facets" + only, arguments)
        for facet in facets {
            // `named` is an integer on both backends, so the test is spelled as one.
            try db.execute(
                """
                INSERT INTO group_facets (fingerprint, facet, named, value, count)
                SELECT s.fingerprint, '\(facet.field.description)', CASE WHEN \(facet.value) IS NOT NULL THEN 1 ELSE 0 END,
                    COALESCE(\(facet.value), ''), COUNT(*)
                \(members) GROUP BY 1, 2, 3, 4
                """,
                arguments)
        }
    }

    /// Refills the membership tables and the distinct users and sessions they count, with each
    /// member's last arrival: `rebuild`'s second half, and the v22 migration that added `last_at`.
    static func rebuildMembers(_ db: SQLExecutor, fingerprint: String?) throws {
        let (members, only, arguments) = scope(fingerprint)
        for d in distincts {
            try db.execute("DELETE FROM \(d.table)" + only, arguments)
            let columns = d.perVersion ? "fingerprint, version, \(d.key)" : "fingerprint, \(d.key)"
            let values = d.perVersion ? "s.fingerprint, COALESCE(r.version, ''), \(d.value)" : "s.fingerprint, \(d.value)"
            try db.execute(
                """
                INSERT INTO \(d.table) (\(columns), reports, last_at)
                SELECT \(values), COUNT(*), MAX(r.received_at) \(members) AND \(d.value) IS NOT NULL GROUP BY \(d.perVersion ? "1, 2, 3" : "1, 2")
                """,
                arguments)
            if d.perVersion {
                try db.execute(
                    """
                    UPDATE group_versions SET \(d.counter) = (SELECT COUNT(*) FROM \(d.table) m
                        WHERE m.fingerprint = group_versions.fingerprint AND m.version = group_versions.version)\(only)
                    """,
                    arguments)
            } else {
                try db.execute(
                    "UPDATE groups SET \(d.counter) = (SELECT COUNT(*) FROM \(d.table) m WHERE m.fingerprint = groups.fingerprint)\(only)",
                    arguments)
            }
        }
    }
}
