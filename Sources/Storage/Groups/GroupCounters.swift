import Foundation
import GRDB
import ReportQuery

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
    static func add(_ db: Database, fingerprint: String, reportIds: [Int64]) throws {
        try change(db, fingerprint: fingerprint, reportIds: reportIds, by: 1)
    }

    /// Reports `reportIds` left group `fingerprint` (their reports still stored).
    static func remove(_ db: Database, fingerprint: String, reportIds: [Int64]) throws {
        try change(db, fingerprint: fingerprint, reportIds: reportIds, by: -1)
    }

    /// A count's row within a group: the app version ("" where the count is the whole group's)
    /// and a day or a member's key.
    private struct Cell: Hashable, Comparable {
        var version: String
        var key: String
        static func < (a: Cell, b: Cell) -> Bool { (a.version, a.key) < (b.version, b.key) }
    }

    private static func change(_ db: Database, fingerprint: String, reportIds: [Int64], by sign: Int) throws {
        guard !reportIds.isEmpty else { return }
        var days: [Int64: Int] = [:]
        var versionDays: [String: [Int64: Int]] = [:]
        var members: [[Cell: Int]] = Array(repeating: [:], count: distincts.count)
        /// Per facet, per value (nil: none).
        var facetValues: [[String?: Int]] = Array(repeating: [:], count: facets.count)
        // Chunks keep the statement's arguments under SQLite's limit.
        for start in stride(from: 0, to: reportIds.count, by: 500) {
            let chunk = Array(reportIds[start..<min(start + 500, reportIds.count)])
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT COALESCE(r.version, ''), r.received_at, \(ReportIdentitySQL.userKey), rs.session_id,
                        \(facets.map(\.value).joined(separator: ", "))
                    FROM reports r LEFT JOIN report_sessions rs ON rs.report_id = r.id
                    WHERE r.id IN (\(databaseQuestionMarks(count: chunk.count)))
                    """,
                arguments: StatementArguments(chunk))
            for row in rows {
                let version: String = row[0]
                let arrival = day(of: row[1])
                days[arrival, default: 0] += 1
                versionDays[version, default: [:]][arrival, default: 0] += 1
                for (i, d) in distincts.enumerated() {
                    guard let key: String = row[d.column] else { continue }
                    members[i][Cell(version: d.perVersion ? version : "", key: key), default: 0] += 1
                }
                for (i, facet) in facets.enumerated() {
                    facetValues[i][row[facet.column] as String?, default: 0] += 1
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
                let key: [(String, any DatabaseValueConvertible)] = d.perVersion
                    ? [("fingerprint", fingerprint), ("version", cell.version), (d.key, cell.key)]
                    : [("fingerprint", fingerprint), (d.key, cell.key)]
                if try bump(db, d.table, where: key, column: "reports", by: sign * n) { changed[cell.version, default: 0] += 1 }
            }
            for (version, n) in changed.sorted(by: { $0.key < $1.key }) {
                if d.perVersion {
                    try db.cachedStatement(
                        sql: "UPDATE group_versions SET \(d.counter) = \(d.counter) + ? WHERE fingerprint = ? AND version = ?"
                    ).execute(arguments: [sign * n, fingerprint, version])
                } else {
                    try db.cachedStatement(sql: "UPDATE groups SET \(d.counter) = \(d.counter) + ? WHERE fingerprint = ?")
                        .execute(arguments: [sign * n, fingerprint])
                }
            }
        }
    }

    /// Adds `n` to `column` of the row of `table` that `key` names, creating it when `n` is
    /// positive and deleting it when its count reaches zero. Returns whether the row appeared
    /// or disappeared.
    @discardableResult
    private static func bump(
        _ db: Database, _ table: String, where key: [(String, any DatabaseValueConvertible)], column: String, by n: Int
    ) throws -> Bool {
        let names = key.map { $0.0 }
        let values = key.map { $0.1 }
        let match = names.map { "\($0) = ?" }.joined(separator: " AND ")
        if n > 0 {
            let now = try Int.fetchOne(
                db.cachedStatement(sql: """
                    INSERT INTO \(table) (\(names.joined(separator: ", ")), \(column)) VALUES (\(databaseQuestionMarks(count: names.count)), ?)
                    ON CONFLICT DO UPDATE SET \(column) = \(column) + excluded.\(column) RETURNING \(column)
                    """),
                arguments: StatementArguments(values + [n]))
            return now == n
        }
        let left = try Int.fetchOne(
            db.cachedStatement(sql: "UPDATE \(table) SET \(column) = \(column) + ? WHERE \(match) RETURNING \(column)"),
            arguments: StatementArguments([n] + values))
        guard let left, left <= 0 else { return false }
        try db.cachedStatement(sql: "DELETE FROM \(table) WHERE \(match)").execute(arguments: StatementArguments(values))
        return true
    }

    /// Recounts everything here for group `fingerprint` (every group when nil) from the results
    /// filed under it: what a merge, an unmerge and the migration that added these counters do.
    /// The group's row and version rows must already hold its members' reports.
    static func rebuild(_ db: Database, fingerprint: String?) throws {
        let only = fingerprint == nil ? "" : " WHERE fingerprint = ?"
        let arguments: StatementArguments = fingerprint.map { [$0] } ?? []
        let scope = fingerprint == nil ? "s.fingerprint IS NOT NULL" : "s.fingerprint = ?"
        let members = """
            FROM results s JOIN reports r ON r.id = s.report_id LEFT JOIN report_sessions rs ON rs.report_id = s.report_id
            WHERE \(scope)
            """
        let day = "r.received_at / \(SessionCounters.dayMs)"
        try db.execute(sql: "DELETE FROM group_days" + only, arguments: arguments)
        try db.execute(
            sql: "INSERT INTO group_days (fingerprint, day, count) SELECT s.fingerprint, \(day), COUNT(*) \(members) GROUP BY 1, 2",
            arguments: arguments)
        try db.execute(sql: "DELETE FROM group_version_days" + only, arguments: arguments)
        try db.execute(
            sql: """
                INSERT INTO group_version_days (version, day, fingerprint, count)
                SELECT COALESCE(r.version, ''), \(day), s.fingerprint, COUNT(*) \(members) GROUP BY 1, 2, 3
                """,
            arguments: arguments)
        try db.execute(sql: "DELETE FROM group_facets" + only, arguments: arguments)
        for facet in facets {
            try db.execute(
                sql: """
                    INSERT INTO group_facets (fingerprint, facet, named, value, count)
                    SELECT s.fingerprint, '\(facet.field.description)', \(facet.value) IS NOT NULL, COALESCE(\(facet.value), ''), COUNT(*)
                    \(members) GROUP BY 1, 2, 3, 4
                    """,
                arguments: arguments)
        }
        for d in distincts {
            try db.execute(sql: "DELETE FROM \(d.table)" + only, arguments: arguments)
            let columns = d.perVersion ? "fingerprint, version, \(d.key)" : "fingerprint, \(d.key)"
            let values = d.perVersion ? "s.fingerprint, COALESCE(r.version, ''), \(d.value)" : "s.fingerprint, \(d.value)"
            try db.execute(
                sql: """
                    INSERT INTO \(d.table) (\(columns), reports)
                    SELECT \(values), COUNT(*) \(members) AND \(d.value) IS NOT NULL GROUP BY \(d.perVersion ? "1, 2, 3" : "1, 2")
                    """,
                arguments: arguments)
            if d.perVersion {
                try db.execute(
                    sql: """
                        UPDATE group_versions SET \(d.counter) = (SELECT COUNT(*) FROM \(d.table) m
                            WHERE m.fingerprint = group_versions.fingerprint AND m.version = group_versions.version)\(only)
                        """,
                    arguments: arguments)
            } else {
                try db.execute(
                    sql: "UPDATE groups SET \(d.counter) = (SELECT COUNT(*) FROM \(d.table) m WHERE m.fingerprint = groups.fingerprint)\(only)",
                    arguments: arguments)
            }
        }
    }
}
