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
/// move, a merge or retention leaves the count exact.
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

    private static func change(_ db: SQLExecutor, fingerprint: String, reportIds: [Int64], by sign: Int) throws {
        guard !reportIds.isEmpty else { return }
        var days: [Int64: Int] = [:]
        var versionDays: [String: [Int64: Int]] = [:]
        var members: [[Cell: Int]] = Array(repeating: [:], count: distincts.count)
        /// Per facet, per value (nil: none).
        var facetValues: [[String?: Int]] = Array(repeating: [:], count: facets.count)
        // Chunks keep the statement's arguments under SQLite's limit.
        for start in stride(from: 0, to: reportIds.count, by: 500) {
            let chunk = Array(reportIds[start..<min(start + 500, reportIds.count)])
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
                let arrival = day(of: try row.int64(1))
                days[arrival, default: 0] += 1
                versionDays[version, default: [:]][arrival, default: 0] += 1
                for (i, d) in distincts.enumerated() {
                    guard let key = try row.optionalString(d.column) else { continue }
                    members[i][Cell(version: d.perVersion ? version : "", key: key), default: 0] += 1
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
        for (i, d) in distincts.enumerated() {
            // Members that appeared (or, removing, disappeared), per version.
            var changed: [String: Int] = [:]
            for (cell, n) in members[i].sorted(by: { $0.key < $1.key }) {
                let key: [(String, SQLBindable)] = d.perVersion
                    ? [("fingerprint", fingerprint), ("version", cell.version), (d.key, cell.key)]
                    : [("fingerprint", fingerprint), (d.key, cell.key)]
                if try bump(db, d.table, where: key, column: "reports", by: sign * n) { changed[cell.version, default: 0] += 1 }
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
    /// positive and deleting it when its count reaches zero. Returns whether the row appeared
    /// or disappeared.
    @discardableResult
    private static func bump(
        _ db: SQLExecutor, _ table: String, where key: [(String, SQLBindable)], column: String, by n: Int
    ) throws -> Bool {
        let names = key.map { $0.0 }
        let values = key.map { $0.1.sqlValue }
        let match = names.map { "\($0) = ?" }.joined(separator: " AND ")
        if n > 0 {
            let now = try db.rows(
                """
                INSERT INTO \(table) (\(names.joined(separator: ", ")), \(column)) VALUES (\(sqlPlaceholders(names.count)), ?)
                ON CONFLICT (\(names.joined(separator: ", "))) DO UPDATE SET \(column) = \(table).\(column) + excluded.\(column)
                RETURNING \(column)
                """,
                values + [n.sqlValue]
            ).first?.optionalInt(0)
            return now == n
        }
        let left = try db.rows(
            "UPDATE \(table) SET \(column) = \(column) + ? WHERE \(match) RETURNING \(column)", [n.sqlValue] + values
        ).first?.optionalInt(0)
        guard let left, left <= 0 else { return false }
        try db.execute("DELETE FROM \(table) WHERE \(match)", values)
        return true
    }

    /// Recounts everything here for group `fingerprint` (every group when nil) from the results
    /// filed under it: what a merge, an unmerge and the migration that added these counters do.
    /// The group's row and version rows must already hold its members' reports.
    static func rebuild(_ db: SQLExecutor, fingerprint: String?) throws {
        let only = fingerprint == nil ? "" : " WHERE fingerprint = ?"
        let arguments: [SQLValue] = fingerprint.map { [.text($0)] } ?? []
        let scope = fingerprint == nil ? "s.fingerprint IS NOT NULL" : "s.fingerprint = ?"
        let members = """
            FROM results s JOIN reports r ON r.id = s.report_id LEFT JOIN report_sessions rs ON rs.report_id = s.report_id
            WHERE \(scope)
            """
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
        for d in distincts {
            try db.execute("DELETE FROM \(d.table)" + only, arguments)
            let columns = d.perVersion ? "fingerprint, version, \(d.key)" : "fingerprint, \(d.key)"
            let values = d.perVersion ? "s.fingerprint, COALESCE(r.version, ''), \(d.value)" : "s.fingerprint, \(d.value)"
            try db.execute(
                """
                INSERT INTO \(d.table) (\(columns), reports)
                SELECT \(values), COUNT(*) \(members) AND \(d.value) IS NOT NULL GROUP BY \(d.perVersion ? "1, 2, 3" : "1, 2")
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
