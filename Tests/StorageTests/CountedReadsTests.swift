import Foundation
import GRDB
import Storage
import ReportModel
import ReportQuery
import TestSupport
import Testing

/// The counts a group's pages and filtered lists show, kept by the ledger (issue 33 §5), against
/// the reports themselves: after every step (ingest, reprocessing, a session named after the
/// result, merge, unmerge, retention, the migration of an older file) each count is compared
/// with COUNT and COUNT(DISTINCT) over `results ⋈ reports ⋈ report_sessions`, written here in
/// the test with its own reading of who a report came from (the SDK's user, else the report's
/// own device key) and read through the engine's own shell (sqlite3, psql), never read back
/// through the counters. On both backends, but for the SQLite file's migration and `db check`.
@Suite struct CountedReadsTests {
    typealias L = GroupLedgerTests
    static let day: Int64 = 86_400_000
    static let hour: Int64 = 3_600_000

    /// Who a report came from, as the test gives it.
    enum Origin {
        case sdk(user: String, session: String)
        case device(String)
        case nobody
    }

    /// Submits a report of `version` from `origin` and files it under `group`; an SDK report's
    /// session is recorded before the result (as intake does) unless `sessionAfterResult`.
    @discardableResult
    static func process(
        _ f: StoreFixture, _ n: Int, version: String?, group: String, from origin: Origin, sessionAfterResult: Bool = false
    ) throws -> Int64 {
        var device: DeviceInfo?
        if case .device(let id) = origin { device = DeviceInfo(model: "iPhone15,2", osVersion: n % 2 == 0 ? "17.4" : nil, id: id) }
        let id = try f.store.submit(
            NewReport(raw: Data("report \(n)".utf8), format: "test", kind: .crash, app: "App", version: version, device: device)).reportId
        func session() throws {
            guard case .sdk(let user, let session) = origin else { return }
            try f.store.recordSDKReports(
                SDKRecordRow(namespace: "ns", sdkReportId: "r\(n)", monitorType: "crash", createdTime: f.clock.now, meta: "{}"),
                reportIds: [id],
                session: SessionIdentity(
                    app: "App", version: version, sessionId: session, userId: user, deviceId: nil,
                    osVersion: n % 3 == 0 ? nil : "17.\(n % 3)", deviceModel: n % 2 == 0 ? "iPhone14,2" : "iPad13,4"))
        }
        if !sessionAfterResult { try session() }
        try L.complete(f, group: L.group(group))
        if sessionAfterResult { try session() }
        return id
    }

    /// One group under a filter, as the oracle counts it.
    struct Counted: Equatable, CustomStringConvertible {
        var fingerprint: String
        var count: Int
        var first: Int64
        var last: Int64
        var users: Int
        var sessions: Int
        var description: String { "\(fingerprint): \(count) reports \(users) users \(sessions) sessions [\(first), \(last)]" }
    }

    static let members = """
        FROM results s JOIN reports r ON r.id = s.report_id LEFT JOIN report_sessions rs ON rs.report_id = s.report_id
        WHERE s.fingerprint IS NOT NULL
        """
    static let user = "coalesce(rs.user_key, 'd:' || r.device_id)"

    /// `text` as an SQL string literal, for the oracle's queries (the shells take no arguments).
    static func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

    static func int(_ value: Any?) throws -> Int { try L.int(value) }

    static func string(_ value: Any?) throws -> String {
        guard let text = value as? String else { throw TestSupportError("not text: \(String(describing: value))") }
        return text
    }

    /// Every group's reports under `version` and `since`, counted from the reports.
    static func oracle(_ f: StoreFixture, version: String? = nil, since: Int64? = nil) throws -> [String: Counted] {
        var sql = "SELECT s.fingerprint AS fp, COUNT(*) AS n, MIN(r.received_at) AS first_at, MAX(r.received_at) AS last_at, "
            + "COUNT(DISTINCT \(user)) AS u, COUNT(DISTINCT rs.session_id) AS se \(members)"
        if let version { sql += " AND COALESCE(r.version, '') = \(literal(version))" }
        if let since { sql += " AND r.received_at >= \(since)" }
        var out: [String: Counted] = [:]
        for row in try f.sql(sql + " GROUP BY s.fingerprint") {
            let fingerprint = try string(row["fp"])
            out[fingerprint] = Counted(
                fingerprint: fingerprint, count: try int(row["n"]), first: Int64(try int(row["first_at"])),
                last: Int64(try int(row["last_at"])), users: try int(row["u"]), sessions: try int(row["se"]))
        }
        return out
    }

    static func counted(_ g: GroupSummary) -> Counted {
        Counted(
            fingerprint: g.fingerprint, count: g.count, first: g.firstSeen.milliseconds, last: g.lastSeen.milliseconds,
            users: g.users, sessions: g.sessions)
    }

    /// The list's order as the reports decide it: most (users, sessions, then) reports first, ties
    /// to the most recent.
    static func ordered(_ groups: [Counted], by sort: GroupSort) -> [Counted] {
        groups.sorted { a, b in
            let (ka, kb): ([Int], [Int]) = switch sort {
            case .users: ([a.users, a.count], [b.users, b.count])
            case .sessions: ([a.sessions, a.count], [b.sessions, b.count])
            case .reports, .lastSeen: ([a.count], [b.count])
            }
            if ka != kb { return kb.lexicographicallyPrecedes(ka) }
            return a.last > b.last
        }
    }

    /// Every read that uses the counters, against the oracle; on SQLite `db check` finds nothing.
    static func expectCountsMatchReports(
        _ f: StoreFixture, reopened: (any ServiceStore)? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let db = reopened ?? f.store
        let all = try oracle(f)
        // The unfiltered list, in each order the counters decide.
        for sort in [GroupSort.reports, .users, .sessions] {
            let listed = try db.groups(GroupFilter(limit: 100, sort: sort)).map(counted)
            #expect(listed == ordered(Array(all.values), by: sort), "sort \(sort)", sourceLocation: sourceLocation)
        }
        // Each group's page: its users and sessions, and per version its reports, users and sessions.
        var perVersion: [String: [String: (n: Int, u: Int, s: Int)]] = [:]
        for row in try f.sql(
            """
            SELECT s.fingerprint AS fp, COALESCE(r.version, '') AS v, COUNT(*) AS n, COUNT(DISTINCT \(user)) AS u,
                   COUNT(DISTINCT rs.session_id) AS se
            \(members) GROUP BY s.fingerprint, COALESCE(r.version, '')
            """)
        {
            perVersion[try string(row["fp"]), default: [:]][try string(row["v"])] = (try int(row["n"]), try int(row["u"]), try int(row["se"]))
        }
        for (fingerprint, truth) in all {
            let detail = try #require(try db.group(fingerprint: fingerprint), sourceLocation: sourceLocation)
            #expect(counted(detail.summary) == truth, sourceLocation: sourceLocation)
            let impact = Dictionary(uniqueKeysWithValues: detail.byVersion.map { ($0.version, "\($0.reports) \($0.users) \($0.sessions)") })
            let expected = (perVersion[fingerprint] ?? [:]).mapValues { "\($0.n) \($0.u) \($0.s)" }
            #expect(impact == expected, "\(fingerprint) per version", sourceLocation: sourceLocation)
        }
        // A group's facets (its web page's): the top two values and the rest, as counting gives them.
        let facetColumns = [
            "os_version": "coalesce(rs.os_version, r.os_version)", "device_model": "coalesce(rs.device_model, r.device_model)",
            "version": "coalesce(rs.version, r.version)",
        ]
        for (name, column) in facetColumns {
            var truth: [String: [(String?, Int)]] = [:]
            for row in try f.sql("SELECT s.fingerprint AS fp, \(column) AS v, COUNT(*) AS n \(members) GROUP BY s.fingerprint, \(column)") {
                truth[try string(row["fp"]), default: []].append((row["v"] as? String, try int(row["n"])))
            }
            for (fingerprint, unordered) in truth {
                // Most reports first, then by value (bytewise), reports without one last.
                let values = unordered.sorted { a, b in
                    if a.1 != b.1 { return a.1 > b.1 }
                    switch (a.0, b.0) {
                    case let (x?, y?): return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
                    case (_?, nil): return true
                    default: return false
                    }
                }
                let facets = try #require(try db.facets(key: try FacetKey(name), fingerprint: fingerprint, top: 2), sourceLocation: sourceLocation)
                #expect(facets.values.map { "\($0.value ?? "-") \($0.count)" } == values.prefix(2).map { "\($0.0 ?? "-") \($0.1)" },
                        "\(fingerprint) \(name)", sourceLocation: sourceLocation)
                #expect(facets.total == values.map(\.1).reduce(0, +), sourceLocation: sourceLocation)
                #expect(facets.other == values.dropFirst(2).map(\.1).reduce(0, +), sourceLocation: sourceLocation)
            }
        }
        // Trends: reports per UTC day over the last 30 days.
        let now = f.clock.now
        let trends = try db.dailyCounts(fingerprints: Array(all.keys), days: 30, now: now)
        var days: [String: [Int64: Int]] = [:]
        for row in try f.sql(
            "SELECT s.fingerprint AS fp, r.received_at / \(day) AS d, COUNT(*) AS n \(members) GROUP BY s.fingerprint, r.received_at / \(day)")
        {
            days[try string(row["fp"]), default: [:]][Int64(try int(row["d"]))] = try int(row["n"])
        }
        for fingerprint in all.keys {
            let firstDay = now / day - 29
            let expected = (0..<30).map { days[fingerprint]?[firstDay + Int64($0)] ?? 0 }
            #expect(trends[fingerprint] == expected, "\(fingerprint) per day", sourceLocation: sourceLocation)
        }
        // Filtered lists: each version, since mid-day and at a day's start, and both.
        let versions = Set(perVersion.values.flatMap(\.keys))
        // now − 52 h falls between the second and third of `fill`'s reports (five hours apart, the
        // last one five hours before now), where a member's last report decides whether it counts.
        var sinces: [Int64] = [0, now - 2 * day, (now / day - 1) * day, now - 52 * 3_600_000, now - 3_600_000, now + 1]
        // Around three reports' arrivals: just before, at and just after one, the start of its
        // hour and half an hour before it, where the day counters, the whole hours and the part
        // of an hour counted from the rows meet. Before the first, ann and her session s1 have a
        // report in the part of an hour and their last ones in whole hours: counted once.
        let arrivals = try f.sql("SELECT DISTINCT received_at AS t FROM reports ORDER BY received_at").map { Int64(try int($0["t"])) }
        for t in Set([arrivals.first, arrivals.dropFirst(2).first, arrivals.dropLast().last].compactMap { $0 }) {
            sinces += [t - 1, t, t + 1, t / Self.hour * Self.hour, t - Self.hour / 2]
        }
        var filters: [(String?, Int64?)] = versions.map { ($0, nil) } + sinces.map { (nil, $0) }
        filters += versions.flatMap { v in sinces.map { (v, $0) } }
        for (version, since) in filters {
            let truth = try oracle(f, version: version, since: since)
            for sort in [GroupSort.reports, .users, .sessions, .lastSeen] {
                let listed = try db.groups(GroupFilter(version: version, since: since, limit: 100, sort: sort)).map(counted)
                let expected = sort == .lastSeen
                    ? truth.values.sorted { ($0.last, $0.count) > ($1.last, $1.count) } : ordered(Array(truth.values), by: sort)
                #expect(listed == expected, "version \(version ?? "-") since \(since ?? -1) sort \(sort)", sourceLocation: sourceLocation)
            }
            // A short page: the groups tied at its end are told apart by their last report.
            let page = try db.groups(GroupFilter(version: version, since: since, limit: 2)).map(counted)
            #expect(page == Array(ordered(Array(truth.values), by: .reports).prefix(2)), sourceLocation: sourceLocation)
        }
        // `db check` recounts every counter from the reports, on either backend.
        if let sqlite = db as? ServiceDatabase {
            #expect(try sqlite.check().problems == [], sourceLocation: sourceLocation)
        } else if let postgres = db as? PostgresDatabase {
            #expect(try postgres.check().problems == [], sourceLocation: sourceLocation)
        } else {
            Issue.record("no db check for \(type(of: db))", sourceLocation: sourceLocation)
        }
    }

    /// Reports over three days, in three groups and versions, from SDK users (some with several
    /// sessions), from devices that name only themselves, and from nobody.
    static func fill(_ f: StoreFixture) throws -> [Int64] {
        var ids: [Int64] = []
        let plan: [(String?, String, Origin)] = [
            ("1.0", "aaaa", .sdk(user: "ann", session: "s1")), ("1.0", "aaaa", .sdk(user: "ann", session: "s1")),
            ("1.1", "aaaa", .sdk(user: "ann", session: "s2")), ("1.1", "aaaa", .sdk(user: "bob", session: "s3")),
            ("1.1", "aaaa", .device("dev-1")), (nil, "aaaa", .nobody), ("1.0", "bbbb", .device("dev-1")),
            ("1.0", "bbbb", .device("dev-2")), ("1.1", "bbbb", .sdk(user: "bob", session: "s4")), ("1.1", "cccc", .nobody),
            ("1.1", "cccc", .sdk(user: "cat", session: "s5")), (nil, "bbbb", .sdk(user: "ann", session: "s6")),
        ]
        for (n, (version, group, origin)) in plan.enumerated() {
            ids.append(try process(f, n, version: version, group: group, from: origin))
            // Five hours apart: the reports fall on three UTC days, some on each side of midnight.
            f.clock.advance(seconds: 5 * 3600)
        }
        return ids
    }

    @Test(arguments: Backend.allCases) func ingestReprocessingAndLateSessionsKeepEveryCountExact(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let ids = try Self.fill(f)
        try Self.expectCountsMatchReports(f)
        // Reprocessing moves ann's first report from aaaa to bbbb: aaaa keeps ann (her other
        // reports), bbbb gains her session s1; then bob's only aaaa report leaves for cccc.
        try f.store.enqueueReprocessing(reportId: ids[0])
        try L.complete(f, group: L.group("bbbb"))
        try Self.expectCountsMatchReports(f)
        try f.store.enqueueReprocessing(reportId: ids[3])
        try L.complete(f, group: L.group("cccc"))
        try Self.expectCountsMatchReports(f)
        #expect(try f.store.group(fingerprint: "aaaa")?.byVersion.first { $0.version == "1.1" }?.users == 2, "ann and dev-1 stay")
        // Out of every group and back.
        try f.store.enqueueReprocessing(reportId: ids[4])
        try L.complete(f, group: nil)
        try Self.expectCountsMatchReports(f)
        // An SDK record naming a report already filed: it leaves its device's user for the SDK's.
        try Self.process(f, 20, version: "1.1", group: "aaaa", from: .device("dev-9"))
        try Self.process(f, 21, version: "1.1", group: "aaaa", from: .sdk(user: "dan", session: "s9"), sessionAfterResult: true)
        try Self.expectCountsMatchReports(f)
        #expect(try f.store.group(fingerprint: "aaaa")?.summary.sessions == Self.oracle(f)["aaaa"]?.sessions)
        // ann's last report in aaaa leaves it while an earlier one stays: since a time between
        // the two, aaaa no longer counts her (her membership's last report is the earlier one).
        let since = f.clock.now - 52 * 3_600_000
        let annIn = { try f.sqlInt("SELECT COUNT(*) FROM results s JOIN report_sessions rs ON rs.report_id = s.report_id "
            + "WHERE s.fingerprint = 'aaaa' AND rs.user_key = 'u:ann' AND s.received_at >= \(since)") }
        #expect(try annIn() == 1)
        try f.store.enqueueReprocessing(reportId: ids[2])
        try L.complete(f, group: L.group("cccc"))
        #expect(try annIn() == 0)
        try Self.expectCountsMatchReports(f)
        let listed = try f.store.groups(GroupFilter(since: since, limit: 100)).first { $0.fingerprint == "aaaa" }
        #expect(try listed?.users == Self.oracle(f, since: since)["aaaa"]?.users)
    }

    @Test(arguments: Backend.allCases) func mergeUnmergeAndRetentionKeepEveryCountExact(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        _ = try Self.fill(f)
        try f.store.mergeGroup("bbbb", into: "aaaa", actor: "alice")
        try Self.expectCountsMatchReports(f)
        try Self.process(f, 30, version: "1.1", group: "bbbb", from: .sdk(user: "eve", session: "s30"))
        try Self.expectCountsMatchReports(f)
        try f.store.unmergeGroup("bbbb", actor: "alice")
        try Self.expectCountsMatchReports(f)
        // Retention removes the first day and a half: users whose last report in a group goes leave it.
        let cutoff = f.clock.now - 40 * 3600
        let before = try Self.oracle(f)
        _ = try f.store.prune(PruneRequest(receivedBefore: cutoff, reclaim: .incrementalOnly, batchSize: 2))
        try Self.expectCountsMatchReports(f)
        #expect(try Self.oracle(f) != before, "the prune removed reports")
    }

    /// A list since a time walks the groups in the order of their reports ever and stops where
    /// none left can reach its page: here the groups with most reports ever have few or none in
    /// the window, some are tied in it, and every page size must be what counting gives.
    @Test(arguments: Backend.allCases) func aPageSinceATimeIsTheSameWhereverTheWalkStops(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let plan: [(group: String, old: Int, recent: Int)] = [
            ("g0", 6, 0), ("g1", 5, 1), ("g2", 4, 3), ("g3", 3, 3), ("g4", 3, 2), ("g5", 2, 2), ("g6", 1, 1), ("g7", 0, 2),
            ("g8", 0, 1), ("g9", 0, 3),
        ]
        var n = 100
        for (group, old, _) in plan {
            for _ in 0..<old {
                try Self.process(f, n, version: "1.0", group: group, from: .device("d\(n % 3)"))
                n += 1
                f.clock.advance(seconds: 1200)
            }
        }
        f.clock.advance(seconds: 2 * 86400)
        // Half an hour before the first report in the window: a part of an hour, whole hours after it.
        let since = f.clock.now - 1_800_000
        for (group, _, recent) in plan {
            for _ in 0..<recent {
                try Self.process(f, n, version: "1.1", group: group, from: .sdk(user: "u\(n % 4)", session: "s\(n)"))
                n += 1
                f.clock.advance(seconds: 600)
            }
        }
        let truth = Self.ordered(Array(try Self.oracle(f, since: since).values), by: .reports)
        #expect(truth.count == 9)
        for limit in 1...truth.count + 1 {
            let page = try f.store.groups(GroupFilter(since: since, limit: limit)).map(Self.counted)
            #expect(page == Array(truth.prefix(limit)), "limit \(limit)")
        }
    }

    /// The walk's chunks are the page's size, then twice the last: here, for a page of one, the
    /// eighth group in the order of reports ever starts the fourth chunk, and it has as many
    /// reports ever as the best so far has in the window, all of them in it and the latest. It
    /// can tie with that best and win the tie, so it must be counted.
    @Test(arguments: Backend.allCases) func aGroupWhoseReportsEverEqualThePagesLastIsCounted(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        // (old, recent): h0 has 4 in the window; h1…h6 more ever, fewer in it (and one at least, or
        // their last report would keep them out of the walk); hx 4 ever, all in it.
        let plan: [(group: String, old: Int, recent: Int)] = [
            ("h0", 3, 4), ("h1", 6, 1), ("h2", 5, 1), ("h3", 6, 1), ("h4", 5, 1), ("h5", 5, 2), ("h6", 5, 3), ("hx", 0, 4),
        ]
        var n = 200
        for (group, old, _) in plan {
            for _ in 0..<old {
                try Self.process(f, n, version: "1.0", group: group, from: .nobody)
                n += 1
            }
        }
        f.clock.advance(seconds: 86400)
        let since = f.clock.now
        for (group, _, recent) in plan {
            for _ in 0..<recent {
                f.clock.advance(seconds: 60)
                try Self.process(f, n, version: "1.0", group: group, from: .nobody)
                n += 1
            }
        }
        let truth = Self.ordered(Array(try Self.oracle(f, since: since).values), by: .reports)
        #expect(truth.first?.fingerprint == "hx")
        let page = try f.store.groups(GroupFilter(since: since, limit: 1)).map(Self.counted)
        #expect(page == Array(truth.prefix(1)))
        // Under their version, whose groups are read a chunk at a time in the order of their
        // reports under it (ties among them included), every page size.
        let versioned = Self.ordered(Array(try Self.oracle(f, version: "1.0", since: since).values), by: .reports)
        for limit in 1...versioned.count + 1 {
            let page = try f.store.groups(GroupFilter(version: "1.0", since: since, limit: limit)).map(Self.counted)
            #expect(page == Array(versioned.prefix(limit)), "version 1.0, limit \(limit)")
        }
    }

    /// A file written before the counters existed: opening it fills them from its rows.
    // SQLite only: the file of an older SQLite release, migrated; PostgreSQL's schema began after the counters.
    @Test func theMigrationFillsTheCountersOfAnOlderDatabase() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.remove() }
        let ids = try Self.fill(f)
        try f.store.enqueueReprocessing(reportId: ids[1])
        try L.complete(f, group: L.group("cccc"))
        let queue = try DatabaseQueue(path: f.location)
        try queue.writeWithoutTransaction { try Self.undoCountedReads($0) }
        try queue.close()
        let clock = f.clock
        try Self.expectCountsMatchReports(f, reopened: try ServiceDatabase(path: f.location, clock: { clock.now }))
    }

    /// A database written before memberships kept their last report (SQLite's v21, PostgreSQL's
    /// v4): opening it fills `last_at` from the reports, then the hourly counters from them.
    @Test(arguments: Backend.allCases) func theMigrationFillsTheMembersLastReports(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let ids = try Self.fill(f)
        try f.store.enqueueReprocessing(reportId: ids[2])
        try L.complete(f, group: L.group("cccc"))
        // The hourly counters (v23, v6) count the members by their last reports: they go too.
        let tables = ["group_users", "group_sessions", "group_version_users", "group_version_sessions"]
        let undo = tables.map { "ALTER TABLE \($0) DROP COLUMN last_at;" }.joined(separator: " ")
            + Self.hourlyTables.map { " DROP TABLE \($0);" }.joined() + " DROP INDEX group_versions_by_count;"
            + (backend == .sqlite ? " DELETE FROM grdb_migrations WHERE identifier LIKE 'v22:%' OR identifier LIKE 'v23:%';"
                : " DELETE FROM schema_migrations WHERE name LIKE 'v5:%' OR name LIKE 'v6:%';")
        try f.execute(undo)
        #expect(try f.sqlInt("SELECT COUNT(*) FROM group_users") > 0, "the memberships stay; only their last reports went")
        try Self.expectCountsMatchReports(f, reopened: try f.another())
    }

    /// A database written before the hourly counters (SQLite's v22, PostgreSQL's v5): opening it
    /// fills them from the reports and the memberships.
    @Test(arguments: Backend.allCases) func theMigrationFillsTheHourlyCounters(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let ids = try Self.fill(f)
        try f.store.enqueueReprocessing(reportId: ids[2])
        try L.complete(f, group: L.group("cccc"))
        try Self.process(f, 40, version: "1.1", group: "aaaa", from: .sdk(user: "ann", session: "s40"))
        // As v22 left it: the memberships' last reports indexed, which v23 (v6) drops.
        try f.execute(Self.hourlyTables.map { "DROP TABLE \($0);" }.joined(separator: " ") + " DROP INDEX group_versions_by_count;"
            + " CREATE INDEX group_users_by_last ON group_users (fingerprint, last_at);"
            + " CREATE INDEX group_sessions_by_last ON group_sessions (fingerprint, last_at);"
            + " CREATE INDEX group_version_users_by_last ON group_version_users (fingerprint, version, last_at);"
            + " CREATE INDEX group_version_sessions_by_last ON group_version_sessions (fingerprint, version, last_at);"
            + (backend == .sqlite ? " DELETE FROM grdb_migrations WHERE identifier LIKE 'v23:%';"
                : " DELETE FROM schema_migrations WHERE name LIKE 'v6:%';"))
        try Self.expectCountsMatchReports(f, reopened: try f.another())
        #expect(try f.sqlInt("SELECT COUNT(*) FROM group_member_hours") > 0)
        let indexes = backend == .sqlite ? "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '%_by_last'"
            : "SELECT COUNT(*) FROM pg_indexes WHERE indexname LIKE '%_by_last'"
        #expect(try f.sqlInt(indexes) == 0)
    }

    static let hourlyTables = ["group_hours", "group_version_hours", "group_member_hours", "group_version_member_hours"]

    /// `db check` names a counter that disagrees with the reports, on either backend.
    @Test(arguments: Backend.allCases) func dbCheckNamesACounterThatDisagrees(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        func check() throws -> [String] {
            switch f.store {
            case let sqlite as ServiceDatabase: try sqlite.check().problems
            case let postgres as PostgresDatabase: try postgres.check().problems
            default: throw TestSupportError("no db check for \(type(of: f.store))")
            }
        }
        _ = try Self.fill(f)
        #expect(try check() == [])
        try f.execute("""
            UPDATE groups SET users = users + 1 WHERE fingerprint = 'aaaa';
            DELETE FROM group_version_sessions WHERE session_id = 's3';
            UPDATE group_days SET count = count + 1 WHERE fingerprint = 'cccc';
            UPDATE group_member_hours SET users = users + 1 WHERE fingerprint = 'bbbb';
            DELETE FROM group_version_hours WHERE fingerprint = 'aaaa' AND version = '1.0';
            UPDATE group_facets SET count = count + 1 WHERE facet = 'device_model' AND fingerprint = 'bbbb';
            """)
        let problems = try check()
        #expect(problems.contains { $0.hasPrefix("group_facets: ") })
        #expect(problems.contains("group aaaa: users or sessions are not its reports'"))
        #expect(problems.contains("group_version_sessions: 1 rows differ from the reports"))
        #expect(problems.contains { $0.hasPrefix("group_days: ") })
        #expect(problems.contains { $0.hasPrefix("group_member_hours: ") })
        #expect(problems.contains("group_version_hours: 2 rows differ from the reports"))
    }

    /// Takes a file back to before "v17: counted reads" (its tables, columns and index gone, the
    /// migration not applied), as a file written by the release before it is.
    static func undoCountedReads(_ db: Database) throws {
        try db.execute(sql: """
            DROP TABLE group_days; DROP TABLE group_version_days; DROP TABLE group_users; DROP TABLE group_sessions;
            DROP TABLE group_version_users; DROP TABLE group_version_sessions; DROP TABLE group_facets;
            DROP TABLE group_hours; DROP TABLE group_version_hours; DROP TABLE group_member_hours; DROP TABLE group_version_member_hours;
            DROP INDEX group_versions_by_count;
            ALTER TABLE groups DROP COLUMN users; ALTER TABLE groups DROP COLUMN sessions;
            ALTER TABLE group_versions DROP COLUMN users; ALTER TABLE group_versions DROP COLUMN sessions;
            DELETE FROM grdb_migrations WHERE identifier LIKE 'v17:%' OR identifier LIKE 'v22:%' OR identifier LIKE 'v23:%';
            """)
        if try db.columns(in: "results").contains(where: { $0.name == "received_at" }) {
            try db.execute(sql: """
                DROP INDEX results_group_arrival; ALTER TABLE results DROP COLUMN received_at;
                CREATE INDEX results_fingerprint ON results (fingerprint);
                """)
        }
    }
}
