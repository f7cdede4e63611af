import Foundation
import SQLInterface

/// A group list filtered by `version` and/or `since`, answered from the ledger's counters
/// (`GroupCounters`) instead of from every report under the filter (issue 33 §5): the reports
/// per group come from `group_version_days` or `group_days` for whole UTC days and from the
/// reports only on the day `since` falls in; users and sessions under `version` alone come
/// from `group_versions`. What a counter cannot give is read from the few reports it is about,
/// through the group's arrival index: the last report under the filter of the groups tied at
/// the end of the page (the order's tie-break) and the first one of each group shown. Users
/// and sessions since a time, of the groups shown, are the membership rows whose last report
/// arrived in the window (`GroupCounters`). Same rows, in the same order, as counting the
/// members under the filter.
struct CountedGroupFilter {
    let version: String?
    let since: Int64?

    /// The filter when the counters can answer it with its sort; nil otherwise (a namespace,
    /// a time before the epoch, or an order by users, sessions or last seen that only the
    /// window's reports can decide).
    init?(_ filter: GroupFilter) {
        guard filter.namespace == nil, filter.version != nil || filter.since != nil else { return nil }
        if let since = filter.since, since < 0 { return nil }
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
            let edgeDay = GroupCounters.day(of: since)
            let edgeStart = edgeDay * SessionCounters.dayMs
            // Whole days from the counters; the day `since` falls in, unless it starts it, from its reports.
            let firstWholeDay = since == edgeStart ? edgeDay : edgeDay + 1
            let (table, versionMatch): (String, String) = version == nil ? ("group_days", "") : ("group_version_days", "d.version = ? AND")
            let versionArgument: [SQLValue] = version.map { [.text($0)] } ?? []
            // By day: left to itself SQLite's planner reads all of group_days in its key's order.
            let index = version == nil && db.dialect == .sqlite ? " INDEXED BY group_days_by_day" : ""
            for row in try db.rows(
                """
                SELECT d.fingerprint, SUM(d.count) FROM \(table) d\(index) JOIN groups g ON g.fingerprint = d.fingerprint
                WHERE \(versionMatch) d.day >= ? \(groupFilter) GROUP BY d.fingerprint
                """,
                versionArgument + [.integer(firstWholeDay)] + arguments)
            {
                candidates[try row.string(0)] = Candidate(fingerprint: try row.string(0), count: try row.int(1))
            }
            if since != edgeStart {
                let edgeGroups = try db.rows(
                    """
                    SELECT d.fingerprint FROM \(table) d\(index) JOIN groups g ON g.fingerprint = d.fingerprint
                    WHERE \(versionMatch) d.day = ? \(groupFilter)
                    """,
                    versionArgument + [.integer(edgeDay)] + arguments
                ).map { try $0.string(0) }
                // The groups of the edge day counted a chunk per statement: one statement per group
                // was a round trip per group on PostgreSQL, thousands of them at a million reports
                // (scripts/bench-reads.sh, `?since=7d`).
                for chunk in edgeGroups.sqlChunks {
                    var sql = "SELECT s.fingerprint, COUNT(*) FROM results s"
                    if version != nil { sql += " JOIN reports r ON r.id = s.report_id" }
                    sql += " WHERE s.fingerprint IN (\(sqlPlaceholders(chunk.count))) AND s.received_at >= ? AND s.received_at < ?"
                    var chunkArguments = chunk.map { SQLValue.text($0) } + [.integer(since), .integer(edgeStart + SessionCounters.dayMs)]
                    if let version {
                        sql += " AND COALESCE(r.version, '') = ?"
                        chunkArguments.append(.text(version))
                    }
                    for row in try db.rows(sql + " GROUP BY s.fingerprint", chunkArguments) {
                        let fingerprint = try row.string(0)
                        candidates[fingerprint, default: Candidate(fingerprint: fingerprint, count: 0)].count += try row.int(1)
                    }
                }
            }
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
        // The order before its tie-break on the last report, most first.
        func rank(_ c: Candidate) -> [Int] {
            switch sort {
            case .users: [c.users ?? 0, c.count]
            case .sessions: [c.sessions ?? 0, c.count]
            case .reports, .lastSeen: [c.count]
            }
        }
        var ordered = candidates.values.sorted { rank($1).lexicographicallyPrecedes(rank($0)) }
        guard !ordered.isEmpty else { return [] }
        // Every group that ranks at least as the page's last one may be on it: their last
        // reports decide between them.
        let cutoff = rank(ordered[min(limit, ordered.count) - 1])
        ordered = ordered.filter { !rank($0).lexicographicallyPrecedes(cutoff) }
        for i in ordered.indices {
            ordered[i].last = try end(db, ordered[i].fingerprint, last: true)
        }
        ordered.sort { a, b in
            let (ra, rb) = (rank(a), rank(b))
            if ra != rb { return rb.lexicographicallyPrecedes(ra) }
            if a.last != b.last { return (a.last ?? 0) > (b.last ?? 0) }
            return a.fingerprint < b.fingerprint
        }
        return try ordered.prefix(limit).compactMap { c in
            let first = try end(db, c.fingerprint, last: false)
            var users = c.users
            var sessions = c.sessions
            if let since, users == nil || sessions == nil {
                // Members whose last report in the group (under the version) arrived in the window.
                let (scope, key): (String, [SQLValue]) = version.map { ("fingerprint = ? AND version = ?", [.text(c.fingerprint), .text($0)]) }
                    ?? ("fingerprint = ?", [.text(c.fingerprint)])
                let prefix = version == nil ? "group" : "group_version"
                users = try db.int("SELECT COUNT(*) FROM \(prefix)_users WHERE \(scope) AND last_at >= ?", key + [.integer(since)])
                sessions = try db.int("SELECT COUNT(*) FROM \(prefix)_sessions WHERE \(scope) AND last_at >= ?", key + [.integer(since)])
            }
            return try db.row(
                """
                SELECT \(GroupRows.columns), CAST(? AS BIGINT) AS n, CAST(? AS BIGINT) AS first, CAST(? AS BIGINT) AS last,
                       CAST(? AS BIGINT) AS u, CAST(? AS BIGINT) AS se
                FROM groups g WHERE g.fingerprint = ?
                """,
                c.count, first, c.last, users ?? 0, sessions ?? 0, c.fingerprint)
        }
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
