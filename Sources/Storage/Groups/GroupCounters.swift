import Foundation
import ReportQuery
import SQLInterface

/// What a group's pages and filtered lists show besides its reports per version
/// (`group_versions.count`): its reports per UTC day, whole (`group_days`) and per app version
/// (`group_version_days`), the same per hour (`group_hours`, `group_version_hours`: the day a
/// `since` falls in), its reports per value of the facets its page shows (`group_facets`), and
/// its distinct users and sessions, whole (`groups`) and per app version (`group_versions`).
/// Kept in the transaction that files or unfiles a report, as the
/// ledger keeps the report counts, so a page reads a few rows however many reports the group
/// has (issue 33 §5). `db check` holds every one of them to the reports.
///
/// A distinct count is kept through a membership table: one row per (group, user) (or
/// session; per version too) with how many of the group's reports it has. A row that appears
/// adds one to the count, a row whose reports reach zero is deleted and takes one away, so a
/// move, a merge or retention leaves the count exact. Each row also keeps the arrival of its
/// member's last report in the group (`last_at`): the distinct users or sessions since a time
/// are the rows with `last_at` at or after it. So that a list filtered by `since`
/// (`CountedGroupFilter`) reads a number of rows that does not grow with the reports in the
/// window, the rows are also counted per hour of their `last_at` (`group_member_hours`,
/// `group_version_member_hours`): a member whose last report moves to a later hour leaves one
/// hour's count for the other's. Only the members of the part of an hour before `since`'s next
/// whole hour are found from that part's reports.
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

        /// The table of its members per hour of their last report, and that table's column.
        var hoursTable: String { perVersion ? "group_version_member_hours" : "group_member_hours" }
        var hoursColumn: Int { counter == "users" ? 0 : 1 }
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

    /// A length of time a group's reports are counted per, whole (`group_days`, `group_hours`)
    /// and per app version (`group_version_days`, `group_version_hours`), each keyed by the
    /// period's number since the epoch in a column of its name.
    struct Period {
        /// The key column, and the tables' names: `group_\(name)s`, `group_version_\(name)s`.
        let name: String
        let ms: Int64

        static let day = Period(name: "day", ms: SessionCounters.dayMs)
        static let hour = Period(name: "hour", ms: 3_600_000)
        static let all = [day, hour]

        var table: String { "group_\(name)s" }
        var versionTable: String { "group_version_\(name)s" }

        /// The period a time falls in (SQL's integer division, which truncates as Swift's does).
        func index(of time: Int64) -> Int64 { time / ms }
        /// The same in SQL, of a time in milliseconds.
        func index(ofSQL time: String) -> String { "\(time) / \(ms)" }
    }

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

    /// A member's reports among those added or removed, the last one's arrival, and the
    /// `last_at` of its row before the change (nil: no row).
    private struct Member {
        var reports = 0
        var last = Int64.min
        var before: Int64?

        mutating func add(_ arrival: Int64) {
            reports += 1
            last = max(last, arrival)
        }
    }

    /// A members-per-hour row: the table's version (nil: `group_member_hours`) and the hour.
    private struct HourCell: Hashable, Comparable {
        var version: String?
        var hour: Int64
        static func < (a: HourCell, b: HourCell) -> Bool { (a.version ?? "", a.hour) < (b.version ?? "", b.hour) }
    }

    private static func change(_ db: SQLExecutor, fingerprint: String, reportIds: [Int64], by sign: Int) throws {
        guard !reportIds.isEmpty else { return }
        /// Per period (`Period.all`), reports per period number, whole and per version.
        var periods: [[Int64: Int]] = Array(repeating: [:], count: Period.all.count)
        var versionPeriods: [[String: [Int64: Int]]] = Array(repeating: [:], count: Period.all.count)
        var members: [[Cell: Member]] = Array(repeating: [:], count: distincts.count)
        /// Per facet, per value (nil: none).
        var facetValues: [[String?: Int]] = Array(repeating: [:], count: facets.count)
        // Each member's row as it stands, read with the reports: its `last_at` is the hour it
        // leaves when its last report changes.
        let memberRows = distincts.enumerated().map { i, d in
            "LEFT JOIN \(d.table) m\(i) ON m\(i).fingerprint = ?\(d.perVersion ? " AND m\(i).version = COALESCE(r.version, '')" : "")"
                + " AND m\(i).\(d.key) = \(d.value)"
        }.joined(separator: " ")
        let lastColumn = 4 + facets.count
        for chunk in reportIds.sqlChunks {
            let rows = try db.rows(
                """
                SELECT COALESCE(r.version, ''), r.received_at, \(ReportIdentitySQL.userKey), rs.session_id,
                    \(facets.map(\.value).joined(separator: ", ")), \(distincts.indices.map { "m\($0).last_at" }.joined(separator: ", "))
                FROM reports r LEFT JOIN report_sessions rs ON rs.report_id = r.id \(memberRows)
                WHERE r.id IN (\(sqlPlaceholders(chunk.count)))
                """,
                Array(repeating: SQLValue.text(fingerprint), count: distincts.count) + chunk.map(\.sqlValue))
            for row in rows {
                let version = try row.string(0)
                let receivedAt = try row.int64(1)
                for (i, period) in Period.all.enumerated() {
                    let arrival = period.index(of: receivedAt)
                    periods[i][arrival, default: 0] += 1
                    versionPeriods[i][version, default: [:]][arrival, default: 0] += 1
                }
                for (i, d) in distincts.enumerated() {
                    guard let key = try row.optionalString(d.column) else { continue }
                    let cell = Cell(version: d.perVersion ? version : "", key: key)
                    members[i][cell, default: Member()].add(receivedAt)
                    members[i][cell]?.before = try row.optionalInt64(lastColumn + i)
                }
                for (i, facet) in facets.enumerated() {
                    facetValues[i][try row.optionalString(facet.column), default: 0] += 1
                }
            }
        }
        for (i, period) in Period.all.enumerated() {
            for (at, n) in periods[i].sorted(by: { $0.key < $1.key }) {
                try bump(db, period.table, where: [("fingerprint", fingerprint), (period.name, at)], column: "count", by: sign * n)
            }
            for (version, byPeriod) in versionPeriods[i].sorted(by: { $0.key < $1.key }) {
                for (at, n) in byPeriod.sorted(by: { $0.key < $1.key }) {
                    try bump(
                        db, period.versionTable, where: [("version", version), (period.name, at), ("fingerprint", fingerprint)],
                        column: "count", by: sign * n)
                }
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
        /// Members per hour of their last report: what each hour gains or loses, users and sessions.
        var memberHours: [HourCell: [Int]] = [:]
        for (i, d) in distincts.enumerated() {
            // Members that appeared (or, removing, disappeared), per version.
            var changed: [String: Int] = [:]
            for (cell, member) in members[i].sorted(by: { $0.key < $1.key }) {
                let (appeared, lastAt) = try bumpMember(db, d, fingerprint: fingerprint, cell, member, by: sign, removed: removed)
                if appeared { changed[cell.version, default: 0] += 1 }
                // The member leaves the hour of its row's last report and joins the one of its new last report.
                let version = d.perVersion ? cell.version : nil
                if let before = member.before {
                    memberHours[HourCell(version: version, hour: Period.hour.index(of: before)), default: [0, 0]][d.hoursColumn] -= 1
                }
                if let lastAt { memberHours[HourCell(version: version, hour: Period.hour.index(of: lastAt)), default: [0, 0]][d.hoursColumn] += 1 }
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
        for (cell, change) in memberHours.sorted(by: { $0.key < $1.key }) where change != [0, 0] {
            try bumpMemberHour(db, fingerprint: fingerprint, cell, users: change[0], sessions: change[1])
        }
    }

    /// Adds `users` and `sessions` (either may be negative) to a members-per-hour row, creating
    /// it, and deleting it when both counts reach zero.
    private static func bumpMemberHour(_ db: SQLExecutor, fingerprint: String, _ cell: HourCell, users: Int, sessions: Int) throws {
        let table = cell.version == nil ? "group_member_hours" : "group_version_member_hours"
        let key: [(String, SQLBindable)] = [("fingerprint", fingerprint)] + (cell.version.map { [("version", $0)] } ?? []) + [("hour", cell.hour)]
        let names = key.map(\.0).joined(separator: ", ")
        guard let row = try db.rows(
            """
            INSERT INTO \(table) (\(names), users, sessions) VALUES (\(sqlPlaceholders(key.count + 2)))
            ON CONFLICT (\(names)) DO UPDATE SET users = \(table).users + excluded.users, sessions = \(table).sessions + excluded.sessions
            RETURNING users, sessions
            """,
            key.map { $0.1.sqlValue } + [users.sqlValue, sessions.sqlValue]
        ).first else { return }
        if try row.int(0) == 0, try row.int(1) == 0 {
            let (match, values) = rowCondition(key)
            try db.execute("DELETE FROM \(table) WHERE \(match)", values)
        }
    }

    /// Adds `n` to `column` of the row of `table` that `key` names, creating it when `n` is
    /// positive and deleting it when its count reaches zero. `last`, for a membership table: the
    /// latest arrival among the reports added or removed; adding keeps the greater `last_at`.
    /// Returns whether the row appeared or disappeared, and the `last_at` of the row it left
    /// (nil when there is none).
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
                RETURNING \(column)\(lastColumn)
                """,
                values + [n.sqlValue] + (last.map { [$0.sqlValue] } ?? [])
            ).first
            return (try now?.optionalInt(0) == n, last == nil ? nil : try now?.optionalInt64(1))
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
    /// changes). Returns whether the row appeared or disappeared, and the `last_at` of the row
    /// it left (nil: none).
    private static func bumpMember(
        _ db: SQLExecutor, _ d: Distinct, fingerprint: String, _ cell: Cell, _ member: Member, by sign: Int, removed: Set<Int64>
    ) throws -> (changed: Bool, lastAt: Int64?) {
        let key: [(String, SQLBindable)] = d.perVersion
            ? [("fingerprint", fingerprint), ("version", cell.version), (d.key, cell.key)]
            : [("fingerprint", fingerprint), (d.key, cell.key)]
        let (changed, lastAt) = try bump(db, d.table, where: key, column: "reports", by: sign * member.reports, last: member.last)
        guard sign < 0, let lastAt, member.last >= lastAt else { return (changed, lastAt) }
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
            let at = try latest.int64("at")
            try db.execute("UPDATE \(d.table) SET last_at = ? WHERE \(match)", [.integer(at)] + values)
            return (changed, at)
        }
        return (changed, lastAt)
    }

    /// Recounts everything here for group `fingerprint` (every group when nil) from the results
    /// filed under it: what a merge and an unmerge do. The group's row and version rows must
    /// already hold its members' reports.
    static func rebuild(_ db: SQLExecutor, fingerprint: String?) throws {
        try rebuildCounts(db, fingerprint: fingerprint)
        try rebuildMembers(db, fingerprint: fingerprint)
        try rebuildHours(db, fingerprint: fingerprint)
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

    /// Recounts the reports of group `fingerprint` (every group's when nil) per `period`, whole
    /// and per version, from the results filed under it.
    private static func recount(_ db: SQLExecutor, _ period: Period, fingerprint: String?) throws {
        let (members, only, arguments) = scope(fingerprint)
        let at = period.index(ofSQL: "r.received_at")
        try db.execute("DELETE FROM \(period.table)" + only, arguments)
        try db.execute(
            """
            INSERT INTO \(period.table) (fingerprint, \(period.name), count) SELECT s.fingerprint, \(at), COUNT(*) \(members) GROUP BY 1, 2
            """,
            arguments)
        try db.execute("DELETE FROM \(period.versionTable)" + only, arguments)
        try db.execute(
            """
            INSERT INTO \(period.versionTable) (version, \(period.name), fingerprint, count)
            SELECT COALESCE(r.version, ''), \(at), s.fingerprint, COUNT(*) \(members) GROUP BY 1, 2, 3
            """,
            arguments)
    }

    /// Recounts the reports per day, per version and day, and per facet value (`rebuild` without
    /// the memberships): the v17 migration, whose membership tables v22 fills once they have
    /// `last_at`.
    static func rebuildCounts(_ db: SQLExecutor, fingerprint: String?) throws {
        let (members, only, arguments) = scope(fingerprint)
        try recount(db, .day, fingerprint: fingerprint)
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
    /// member's last arrival: `rebuild`'s second part, and the v22 migration that added `last_at`.
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

    /// Recounts the reports per hour (whole and per version) and the members per hour of their
    /// last report from the membership tables (which must be exact): `rebuild`'s last part, and
    /// the v23 migration that added them.
    static func rebuildHours(_ db: SQLExecutor, fingerprint: String?) throws {
        let (_, only, arguments) = scope(fingerprint)
        try recount(db, .hour, fingerprint: fingerprint)
        for perVersion in [false, true] {
            let scoped = distincts.filter { $0.perVersion == perVersion }
            guard let table = scoped.first?.hoursTable else { continue }
            let keys = perVersion ? "fingerprint, version" : "fingerprint"
            let rows = scoped.map { d in
                "SELECT \(keys), \(Period.hour.index(ofSQL: "last_at")) AS hour, \(d.hoursColumn == 0 ? "1 AS u, 0 AS se" : "0 AS u, 1 AS se") FROM \(d.table)\(only)"
            }.joined(separator: " UNION ALL ")
            try db.execute("DELETE FROM \(table)" + only, arguments)
            try db.execute(
                """
                INSERT INTO \(table) (\(keys), hour, users, sessions)
                SELECT \(keys), hour, SUM(u), SUM(se) FROM (\(rows)) AS m GROUP BY \(keys), hour
                """,
                Array(repeating: arguments, count: scoped.count).flatMap { $0 })
        }
    }
}
