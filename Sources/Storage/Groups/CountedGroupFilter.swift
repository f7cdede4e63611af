import Foundation
import SQLInterface

/// A group list filtered by `version` and/or `since`, answered from the ledger's counters
/// (`GroupCounters`) instead of from every report under the filter (issue 33 §5): the reports
/// per group come from `group_version_days` or `group_days` for whole UTC days, from
/// `group_version_hours` or `group_hours` for the whole hours of the day `since` falls in, and
/// from the reports only in what is left of `since`'s hour; users and sessions under `version`
/// alone come from `group_versions`. What a counter cannot give is read from the few reports it
/// is about, through the group's arrival index: the last report under the filter of the groups
/// tied at the end of the page (the order's tie-break) and the first one of each group shown.
/// Users and sessions since a time, of the groups shown, are the members whose last report
/// arrived in the window: counted per whole hour (`group_member_hours`,
/// `group_version_member_hours`), and from the membership rows in what is left of `since`'s
/// hour. So the rows read grow with the groups and the hours in the window, not with its
/// reports. Same rows, in the same order, as counting the members under the filter.
struct CountedGroupFilter {
    let version: String?
    let since: Int64?

    /// The filter when the counters can answer it with its sort; nil otherwise (a namespace,
    /// a time before the epoch or too far after it for its day's end to be a time, or an order
    /// by users, sessions or last seen that only the window's reports can decide).
    init?(_ filter: GroupFilter) {
        guard filter.namespace == nil, filter.version != nil || filter.since != nil, filter.limit > 0 else { return nil }
        if let since = filter.since, since < 0 || since > Int64.max / 2 { return nil }
        switch filter.sort {
        case .reports: break
        case .users, .sessions: guard filter.since == nil else { return nil }
        case .lastSeen: return nil
        }
        version = filter.version
        since = filter.since
    }

    private struct Candidate {
        var fingerprint: String
        var count: Int
        /// Under `version` alone, from `group_versions`.
        var users: Int?
        var sessions: Int?
        var last: Int64?
    }

    /// The rows `GroupRows.summary` reads (the group's columns and `n`, `first`, `last`,
    /// `u`, `se`), for the groups that pass `conditions` over `groups g`, in the list's order.
    func rows(_ db: SQLExecutor, conditions: [String], arguments: [SQLValue], sort: GroupSort, limit: Int) throws -> [SQLRow] {
        let groupFilter = conditions.isEmpty ? "" : "AND " + conditions.joined(separator: " AND ")
        var candidates: [String: Candidate] = [:]
        if let since {
            candidates = try walk(db, since: since, groupFilter: groupFilter, arguments: arguments, limit: limit)
        } else if let version {
            for row in try db.rows(
                """
                SELECT v.fingerprint, v.count, v.users, v.sessions FROM group_versions v JOIN groups g ON g.fingerprint = v.fingerprint
                WHERE v.version = ? AND v.count > 0 \(groupFilter)
                """,
                [.text(version)] + arguments)
            {
                candidates[try row.string(0)] = Candidate(
                    fingerprint: try row.string(0), count: try row.int(1), users: try row.int(2), sessions: try row.int(3))
            }
        }
        // The order before its tie-break on the last report, most first (a pair, not an array:
        // an array allocated per comparison was most of sorting a thousand candidates).
        func rank(_ c: Candidate) -> (Int, Int) {
            switch sort {
            case .users: (c.users ?? 0, c.count)
            case .sessions: (c.sessions ?? 0, c.count)
            case .reports, .lastSeen: (c.count, 0)
            }
        }
        var ordered = candidates.values.sorted { rank($0) > rank($1) }
        guard !ordered.isEmpty else { return [] }
        // Every group that ranks at least as the page's last one may be on it: their last
        // reports decide between them.
        let cutoff = rank(ordered[min(limit, ordered.count) - 1])
        ordered = ordered.filter { rank($0) >= cutoff }
        for i in ordered.indices {
            ordered[i].last = try end(db, ordered[i].fingerprint, last: true)
        }
        ordered.sort { a, b in
            let (ra, rb) = (rank(a), rank(b))
            if ra != rb { return ra > rb }
            if a.last != b.last { return (a.last ?? 0) > (b.last ?? 0) }
            return a.fingerprint < b.fingerprint
        }
        let shown = Array(ordered.prefix(limit))
        let members = try since.map { try membersSince($0, db, shown.map(\.fingerprint)) } ?? [:]
        return try shown.compactMap { c in
            let first = try end(db, c.fingerprint, last: false)
            let users = c.users ?? members[c.fingerprint]?[0]
            let sessions = c.sessions ?? members[c.fingerprint]?[1]
            return try db.row(
                """
                SELECT \(GroupRows.columns), CAST(? AS BIGINT) AS n, CAST(? AS BIGINT) AS first, CAST(? AS BIGINT) AS last,
                       CAST(? AS BIGINT) AS u, CAST(? AS BIGINT) AS se
                FROM groups g WHERE g.fingerprint = ?
                """,
                c.count, first, c.last, users ?? 0, sessions ?? 0, c.fingerprint)
        }
    }

    /// Where a window from `since` is read from: whole days from the day counters, then the day
    /// `since` falls in (unless it starts it) from its whole hours, then the part of an hour
    /// before them from the reports or the membership rows.
    private struct Window {
        let since: Int64
        let firstWholeDay: Int64
        let firstWholeHour: Int64

        init(_ since: Int64) {
            self.since = since
            let (day, hour) = (GroupCounters.Period.day, GroupCounters.Period.hour)
            let edgeDay = day.index(of: since)
            firstWholeDay = since == edgeDay * day.ms ? edgeDay : edgeDay + 1
            firstWholeHour = (since + hour.ms - 1) / hour.ms
        }

        /// The first hour of the whole days.
        var wholeDaysHour: Int64 { firstWholeDay * (GroupCounters.Period.day.ms / GroupCounters.Period.hour.ms) }
        var hasWholeHours: Bool { firstWholeHour < wholeDaysHour }
        var hasPartHour: Bool { since < partHourEnd }
        var partHourEnd: Int64 { firstWholeHour * GroupCounters.Period.hour.ms }
    }

    /// Each group's reports (under the version) since `since`, for the groups that can be on the
    /// page: walked in the order of their reports ever (`groups.count`, or under the version
    /// `group_versions.count`, which bound their reports in the window), a chunk at a time,
    /// until the next group's reports ever are fewer than the page's last group's in the window.
    /// So the rows read follow the groups that can be shown, not every group with a report in
    /// the window, which grows with the report rate (the long tail). The first chunk is the
    /// page's size and each next one twice the last (up to `sqlChunks`'): a statement per group
    /// was a round trip per group on PostgreSQL.
    private func walk(_ db: SQLExecutor, since: Int64, groupFilter: String, arguments: [SQLValue], limit: Int) throws -> [String: Candidate] {
        let window = Window(since)
        var bounds = try Bounds(db, version: version, since: since, groupFilter: groupFilter, arguments: arguments)
        var candidates: [String: Candidate] = [:]
        var counts: [Int] = []
        var size = limit
        while let nextBound = try bounds.peek(reading: min(size, 500)) {
            if counts.count >= limit, nextBound < counts.sorted(by: >)[limit - 1] { break }
            let chunk = try bounds.take(min(size, 500))
            size = min(size, 500) * 2
            var inWindow: [String: Int] = [:]
            /// The chunk's reports in periods `from..<to` (no end: to now).
            func add(_ period: GroupCounters.Period, from: Int64, to: Int64? = nil) throws {
                // A version's day rows are keyed by version first: read each group's from the index keyed by group.
                let index = version != nil && period.name == "day" && db.dialect == .sqlite ? " INDEXED BY group_version_days_by_group" : ""
                var sql = "SELECT d.fingerprint, SUM(d.count) FROM \(version == nil ? period.table : period.versionTable) d\(index)"
                sql += " WHERE d.fingerprint IN (\(sqlPlaceholders(chunk.count)))\(version == nil ? "" : " AND d.version = ?")"
                sql += " AND d.\(period.name) >= ?\(to == nil ? "" : " AND d.\(period.name) < ?") GROUP BY d.fingerprint"
                let values = chunk.map { SQLValue.text($0) } + (version.map { [.text($0)] } ?? []) + [.integer(from)] + (to.map { [.integer($0)] } ?? [])
                for row in try db.rows(sql, values) { inWindow[try row.string(0), default: 0] += try row.int(1) }
            }
            try add(.day, from: window.firstWholeDay)
            if window.hasWholeHours { try add(.hour, from: window.firstWholeHour, to: window.wholeDaysHour) }
            if window.hasPartHour {
                for row in try partHour(db, window, chunk) { inWindow[try row.string(0), default: 0] += try row.int(1) }
            }
            for (fingerprint, count) in inWindow where count > 0 {
                candidates[fingerprint] = Candidate(fingerprint: fingerprint, count: count)
                counts.append(count)
            }
        }
        return candidates
    }

    /// The groups a walk visits, most reports ever (under the version) first, with those reports:
    /// only groups whose last report arrived at or after `since` (the others have none in the
    /// window). The whole list is read at once, a group's row each; under a version they are read
    /// a chunk at a time along `group_versions_by_count`, since a version's groups ever are many
    /// more than those the page needs.
    private struct Bounds {
        private let db: SQLExecutor
        private let version: String?
        private let since: Int64
        private let groupFilter: String
        private let arguments: [SQLValue]
        private var pending: [(fingerprint: String, count: Int)] = []
        private var next = 0
        private var exhausted = false

        init(_ db: SQLExecutor, version: String?, since: Int64, groupFilter: String, arguments: [SQLValue]) throws {
            self.db = db
            self.version = version
            self.since = since
            self.groupFilter = groupFilter
            self.arguments = arguments
            if version == nil {
                pending = try db.rows(
                    "SELECT g.fingerprint, g.count FROM groups g WHERE g.last_seen >= ? \(groupFilter)", [.integer(since)] + arguments
                ).map { (fingerprint: try $0.string(0), count: try $0.int(1)) }
                    .sorted { $0.count != $1.count ? $0.count > $1.count : $0.fingerprint > $1.fingerprint }
                exhausted = true
            }
        }

        /// The next group's reports ever, nil when none is left; when none is read yet, reads `n`.
        mutating func peek(reading n: Int) throws -> Int? {
            if next == pending.count, !exhausted { try read(n) }
            return next < pending.count ? pending[next].count : nil
        }

        /// The next `n` groups (fewer when fewer are left).
        mutating func take(_ n: Int) throws -> [String] {
            if pending.count - next < n, !exhausted { try read(n - (pending.count - next)) }
            let end = min(next + n, pending.count)
            defer { next = end }
            return pending[next..<end].map(\.fingerprint)
        }

        /// Reads the version's next `n` groups, in the order of `group_versions_by_count`, after the
        /// last one read: the filters apply before the limit, so a read gives `n` or the end.
        private mutating func read(_ n: Int) throws {
            guard let version else { return }
            var sql = """
                SELECT v.fingerprint, v.count FROM group_versions v JOIN groups g ON g.fingerprint = v.fingerprint
                WHERE v.version = ? AND v.count > 0 AND g.last_seen >= ? \(groupFilter)
                """
            var values: [SQLValue] = [.text(version), .integer(since)] + arguments
            // After the last one read.
            if let after = pending.last {
                sql += " AND (v.count < ? OR (v.count = ? AND v.fingerprint < ?))"
                values += [.integer(Int64(after.count)), .integer(Int64(after.count)), .text(after.fingerprint)]
            }
            let rows = try db.rows(sql + " ORDER BY v.count DESC, v.fingerprint DESC LIMIT ?", values + [.integer(Int64(n))])
            pending += try rows.map { (fingerprint: try $0.string(0), count: try $0.int(1)) }
            if rows.count < n { exhausted = true }
        }
    }

    /// The reports (under the version) of each of `fingerprints` in what is left of `since`'s
    /// hour before `window`'s whole hours, from the groups' arrival index.
    private func partHour(_ db: SQLExecutor, _ window: Window, _ fingerprints: [String]) throws -> [SQLRow] {
        var sql = "SELECT s.fingerprint, COUNT(*) FROM results s"
        if version != nil { sql += " JOIN reports r ON r.id = s.report_id" }
        sql += " WHERE s.fingerprint IN (\(sqlPlaceholders(fingerprints.count))) AND s.received_at >= ? AND s.received_at < ?"
        var arguments = fingerprints.map { SQLValue.text($0) } + [.integer(window.since), .integer(window.partHourEnd)]
        if let version {
            sql += " AND COALESCE(r.version, '') = ?"
            arguments.append(.text(version))
        }
        return try db.rows(sql + " GROUP BY s.fingerprint", arguments)
    }

    /// The users and sessions of each of `fingerprints` (under the version) whose last report in
    /// the group arrived at or after `since`: from the members per hour for whole hours; in what
    /// is left of `since`'s hour, the distinct members of its reports whose last report is
    /// before the whole hours (found from the reports, which are few, not from every member).
    private func membersSince(_ since: Int64, _ db: SQLExecutor, _ fingerprints: [String]) throws -> [String: [Int]] {
        let window = Window(since)
        let prefix = version == nil ? "group" : "group_version"
        var members: [String: [Int]] = [:]
        for chunk in fingerprints.sqlChunks {
            let groups = "fingerprint IN (\(sqlPlaceholders(chunk.count)))"
            let chunkArguments = chunk.map { SQLValue.text($0) }
            let versionArgument: [SQLValue] = version.map { [.text($0)] } ?? []
            for row in try db.rows(
                """
                SELECT fingerprint, SUM(users), SUM(sessions) FROM \(prefix)_member_hours
                WHERE \(groups)\(version == nil ? "" : " AND version = ?") AND hour >= ? GROUP BY fingerprint
                """,
                chunkArguments + versionArgument + [.integer(window.firstWholeHour)])
            {
                members[try row.string(0), default: [0, 0]] = [try row.int(1), try row.int(2)]
            }
            guard window.hasPartHour else { continue }
            // The member row `m` of a report `s`: its group's, under its version.
            func member(_ m: String) -> String {
                "\(m).fingerprint = s.fingerprint" + (version == nil ? "" : " AND \(m).version = COALESCE(r.version, '')")
            }
            let users = "\(member("mu")) AND mu.user_key = \(ReportIdentitySQL.userKey)"
            let sessions = "\(member("ms")) AND ms.session_id = rs.session_id"
            for row in try db.rows(
                """
                SELECT s.fingerprint, COUNT(DISTINCT CASE WHEN mu.last_at < ? THEN mu.user_key END),
                       COUNT(DISTINCT CASE WHEN ms.last_at < ? THEN ms.session_id END)
                FROM results s JOIN reports r ON r.id = s.report_id LEFT JOIN report_sessions rs ON rs.report_id = s.report_id
                LEFT JOIN \(prefix)_users mu ON \(users) LEFT JOIN \(prefix)_sessions ms ON \(sessions)
                WHERE s.\(groups) AND s.received_at >= ? AND s.received_at < ?\(version == nil ? "" : " AND COALESCE(r.version, '') = ?")
                GROUP BY s.fingerprint
                """,
                [.integer(window.partHourEnd), .integer(window.partHourEnd)] + chunkArguments
                    + [.integer(since), .integer(window.partHourEnd)] + versionArgument)
            {
                let fingerprint = try row.string(0)
                members[fingerprint, default: [0, 0]][0] += try row.int(1)
                members[fingerprint, default: [0, 0]][1] += try row.int(2)
            }
        }
        return members
    }

    /// The arrival of a group's first or last report under the filter: a walk along its arrival
    /// index (`results_group_arrival`) from `since` or its newest report, which under `version`
    /// starts on the first or last day the version has reports in the group
    /// (`group_version_days`), so it does not cross the reports of the versions before or after it.
    private func end(_ db: SQLExecutor, _ fingerprint: String, last: Bool) throws -> Int64? {
        // Only the version needs the report's row: without it the walk reads the index alone.
        var sql = "SELECT s.received_at FROM results s"
        if version != nil { sql += " JOIN reports r ON r.id = s.report_id" }
        sql += " WHERE s.fingerprint = ?"
        var arguments: [SQLValue] = [.text(fingerprint)]
        if let since {
            sql += " AND s.received_at >= ?"
            arguments.append(.integer(since))
        }
        if let version {
            guard let day = try db.int64(
                "SELECT \(last ? "MAX" : "MIN")(day) FROM group_version_days WHERE fingerprint = ? AND version = ?", fingerprint, version)
            else { return nil }
            sql += " AND COALESCE(r.version, '') = ?" + (last ? " AND s.received_at < ?" : " AND s.received_at >= ?")
            arguments += [.text(version), .integer(last ? (day + 1) * SessionCounters.dayMs : day * SessionCounters.dayMs)]
        }
        return try db.int64(sql + " ORDER BY s.received_at \(last ? "DESC" : "ASC") LIMIT 1", arguments)
    }
}
