import Foundation
import GRDB
import ReportQuery
@testable import Storage
import TestSupport
import Testing

/// Launches into counter rows: one row per key whatever the launches, resends counted once.
/// On both backends, the rows read by the engine's own shell; the migrations of old files on SQLite.
@Suite struct SessionCounterTests {
    func launch(_ id: String, day: Int64 = 20_000, version: String = "1.0", os: String = "17.4", user: String?) -> SessionLaunch {
        SessionLaunch(
            namespace: "prism", sdkReportId: id, createdTime: day * SessionCounters.dayMs + 1234, app: "Prism", version: version,
            osVersion: os, deviceModel: "iPhone15,2", userKey: user)
    }

    /// A fixture whose clock reads day 20,000, the launches' day.
    func fixture(_ backend: Backend) throws -> StoreFixture {
        let f = try StoreFixture(backend)
        f.clock.advance(milliseconds: 20_000 * SessionCounters.dayMs)
        return f
    }

    @Test(arguments: Backend.allCases) func manyLaunchesOfOneKeyMakeOneRow(_ backend: Backend) throws {
        let f = try fixture(backend)
        defer { f.remove() }
        // 1,000 launches of 37 users, in batches of 100: one row, 1,000 sessions, 37 users.
        for batch in 0..<10 {
            let counted = try f.store.recordLaunches((0..<100).map { i in
                let n = batch * 100 + i
                return launch("boot-\(n)", user: "u:\(n % 37)")
            })
            #expect(counted == Array(repeating: true, count: 100))
        }
        let rows = try f.sql("SELECT sessions FROM session_counters")
        #expect(rows.count == 1)
        #expect(rows.first?["sessions"] as? Int == 1000)
        let health = try f.store.releaseHealth(app: "Prism")
        #expect(health.count == 1)
        #expect(health.first?.sessions == 1000)
        #expect(health.first?.users == 37)
        #expect(health.first?.adoption == 1)
        #expect(health.first?.days.map(\.day) == [20_000])

        // Another day, OS or version is another row; the versions split the adoption.
        _ = try f.store.recordLaunches([launch("b1", day: 20_001, user: "u:1"), launch("b2", os: "18.0", user: nil),
                                     launch("b3", day: 20_001, version: "1.1", user: "u:2"), launch("b4", day: 20_001, version: "1.1", user: "u:3"),
                                     launch("b5", day: 20_001, version: "1.1", user: "u:2")])
        #expect(try f.sqlInt("SELECT COUNT(*) FROM session_counters") == 4)
        let byVersion = Dictionary(uniqueKeysWithValues: try f.store.releaseHealth(app: "Prism").map { ($0.version, $0) })
        #expect(byVersion["1.0"]?.sessions == 1002)
        #expect(byVersion["1.0"]?.users == 37)
        #expect(byVersion["1.1"]?.sessions == 3)
        #expect(byVersion["1.1"]?.users == 2)
        #expect(byVersion["1.0"]?.adoptionDay == 20_001)
        #expect(byVersion["1.0"]?.adoption == 0.25)
        #expect(byVersion["1.1"]?.adoption == 0.75)
        #expect(try f.store.releaseHealth(app: "Other").isEmpty)
        #expect(try f.store.releaseHealth(app: "Prism", namespace: "elsewhere").isEmpty)
        // One version at a time (the alert rules' read) is that version's row, adoption included.
        for (version, whole) in byVersion {
            #expect(try f.store.releaseHealth(app: "Prism", version: version) == whole, "\(version)")
        }
        #expect(try f.store.releaseHealth(app: "Prism", version: "9.9") == nil)
        #expect(try f.store.releaseHealth(app: "Prism", version: "1.0", namespace: "elsewhere") == nil)
    }

    /// Retention drops the counters of whole days that ended before the cutoff, never part of
    /// a day: a cutoff inside day 20,002 keeps that day and the ones after it.
    @Test(arguments: Backend.allCases) func pruneDropsTheCountersOfDaysBeforeTheCutoff(_ backend: Backend) throws {
        let f = try fixture(backend)
        defer { f.remove() }
        var launches: [SessionLaunch] = []
        for day in Int64(20_000)...20_003 {
            for n in 0..<3 { launches.append(launch("b-\(day)-\(n)", day: day, os: n == 0 ? "17.4" : "18.0", user: "u:\(n)")) }
        }
        // The server's clock on day 20,004, so no launch is ahead of it (`countedTime`).
        f.clock.advance(milliseconds: 4 * SessionCounters.dayMs)
        _ = try f.store.recordLaunches(launches)
        let cutoff = 20_002 * SessionCounters.dayMs + 3_600_000
        let outcome = try f.store.prune(PruneRequest(receivedBefore: cutoff))
        // Two rows a day (two OS versions), days 20,000 and 20,001 gone.
        #expect(outcome.sessionCounterRowsDeleted == 4)
        let days = try f.sql("SELECT DISTINCT day FROM session_counters ORDER BY day").compactMap { $0["day"] as? Int }
        #expect(days == [20_002, 20_003])
        #expect(try f.store.releaseHealth(app: "Prism").first?.sessions == 6)
        #expect(try f.store.prune(PruneRequest(receivedBefore: cutoff)).sessionCounterRowsDeleted == 0)
    }

    /// A device clock far ahead (or behind what the SDK keeps) counts the launch on the day it
    /// arrived: it must not become the app's last day, which adoption is measured on.
    @Test(arguments: Backend.allCases) func aLaunchFromAWrongClockCountsWhenItArrived(_ backend: Backend) throws {
        let f = try fixture(backend)
        defer { f.remove() }
        _ = try f.store.recordLaunches([
            launch("now", user: "u:1"), launch("tomorrow", day: 20_001, user: "u:2"), launch("future", day: 30_000, user: "u:3"),
            launch("last-month", day: 19_970, user: "u:4"), launch("ancient", day: 100, user: "u:5"),
        ])
        let days = try f.sql("SELECT day, sessions FROM session_counters ORDER BY day")
        #expect(days.map { $0["day"] as? Int } == [19_970, 20_000, 20_001])
        #expect(days.map { $0["sessions"] as? Int } == [1, 3, 1])
        #expect(try f.store.releaseHealth().first?.adoptionDay == 20_001)
    }

    @Test(arguments: Backend.allCases) func aResentLaunchIsCountedOnceWithinTheWindow(_ backend: Backend) throws {
        let f = try fixture(backend)
        defer { f.remove() }
        #expect(try f.store.recordLaunches([launch("a", user: "u:1"), launch("a", user: "u:1"), launch("b", user: "u:2")]) == [true, false, true])
        #expect(try f.store.recordLaunches([launch("a", user: "u:1"), launch("b", user: "u:2")]) == [false, false])
        f.clock.advance(milliseconds: SessionCounters.duplicateWindow - 1)
        #expect(try f.store.recordLaunches([launch("a", user: "u:1")]) == [false])
        #expect(try f.store.releaseHealth().first?.sessions == 2)
        // Past the window the ids are forgotten: the table stays bounded by two days of launches.
        f.clock.advance(milliseconds: 2)
        #expect(try f.store.recordLaunches([launch("c", user: "u:3")]) == [true])
        #expect(try f.sqlInt("SELECT COUNT(*) FROM session_record_ids") == 1)
    }

    /// Crash reports 1, 2, … as SDK records with `metas` stored beside them, in an old schema.
    static func storeSDKReports(_ db: Database, metas: [String]) throws {
        for (n, meta) in metas.enumerated() {
            try db.execute(
                sql: "INSERT INTO reports (id, raw, raw_size, format, digest, kind, received_at) VALUES (?, x'', 0, 't', ?, 'crash', 5)",
                arguments: [n + 1, "digest-\(n)"])
            try db.execute(
                sql: """
                    INSERT INTO sdk_records (namespace, sdk_report_id, report_id, monitor_type, created_time, meta, received_at)
                    VALUES ('prism', ?, ?, 'appCrash', ?, ?, 6)
                    """, arguments: ["r-\(n)", n + 1, 1000 + n, meta])
        }
    }

    // SQLite-only: it upgrades a v12 SQLite file through GRDB's migrator; PostgreSQL has its own schema history.
    /// "v13: sessions" on a v12 database: the SDK reports stored before know their session, user
    /// and device from the meta kept beside them; a meta without them, or not an object, adds
    /// nothing. Checked with `sqlite3`.
    @Test func aV12DatabaseLearnsWhoItsSDKReportsCameFrom() throws {
        let dir = try TempDirectory("sessions-migration")
        defer { dir.remove() }
        let path = dir.file("v12.sqlite")
        do {
            let queue = try DatabaseQueue(path: path)
            try Schema.migrator.migrate(queue, upTo: "v12: missing symbol status")
            try queue.write { db in
                let metas = [
                    #"{"app_name":"Prism","app_version":"3.2","session_id":"S-1","device_id":"D-1","user_id":"alice"}"#,
                    #"{"app_name":"Prism","session_id":"S-2","device_id":"D-2"}"#,
                    #"{"channel":"appstore"}"#,
                    #"[1, 2]"#,
                ]
                try Self.storeSDKReports(db, metas: metas)
            }
            try queue.close()
        }
        _ = try ServiceDatabase(path: path)
        let rows = try sqlite(path, "SELECT report_id, app, version, session_id, user_key, created_time FROM report_sessions ORDER BY report_id")
        #expect(rows.map { $0["report_id"] as? Int } == [1, 2, 3])
        #expect(rows.map { $0["session_id"] as? String } == ["S-1", "S-2", nil])
        #expect(rows.map { $0["user_key"] as? String } == ["u:alice", "d:D-2", nil])
        #expect(rows.map { $0["version"] as? String } == ["3.2", nil, nil])
        #expect(rows.map { $0["created_time"] as? Int } == [1000, 1001, 1002])
    }

    // SQLite-only: it upgrades a v13 SQLite file through GRDB's migrator; PostgreSQL has its own schema history.
    /// "v14: report context" on a v13 database: each SDK report's row learns the OS version and
    /// device model its kept meta named; a meta without them, with them as non-strings, or too
    /// long leaves them null. A search and a facet then read them. Checked with `sqlite3`.
    @Test func aV13DatabaseLearnsItsReportsOSAndModel() throws {
        let dir = try TempDirectory("context-migration")
        defer { dir.remove() }
        let path = dir.file("v13.sqlite")
        let metas = [
            #"{"app_name":"Prism","app_version":"3.10","os_version":"17.2","device_model":"iPhone15,2","channel":"appstore"}"#,
            #"{"app_name":"Prism","app_version":"3.4","device_model":"iPad13,4"}"#,
            #"{"app_name":"Prism","os_version":17,"device_model":""}"#,
            #"{"os_version":"\#(String(repeating: "9", count: 257))"}"#,
        ]
        do {
            let queue = try DatabaseQueue(path: path)
            try Schema.migrator.migrate(queue, upTo: "v13: sessions")
            try queue.write { db in
                try Self.storeSDKReports(db, metas: metas)
                // As v13 kept them: app and version, no OS or model.
                for (n, version) in ["3.10", "3.4", nil, nil].enumerated() {
                    try db.execute(
                        sql: "INSERT INTO report_sessions (report_id, app, version, created_time) VALUES (?, 'Prism', ?, 1000)",
                        arguments: [n + 1, version])
                }
            }
            try queue.close()
        }
        let db = try ServiceDatabase(path: path)
        let rows = try sqlite(path, "SELECT report_id, os_version, device_model FROM report_sessions ORDER BY report_id")
        #expect(rows.map { $0["os_version"] as? String } == ["17.2", nil, nil, nil])
        #expect(rows.map { $0["device_model"] as? String } == ["iPhone15,2", "iPad13,4", nil, nil])
        let found = try db.searchReports(ReportQuery.parse("os=17.2 model~iphone version>=3.4 meta.channel=appstore"), limit: 10)
        #expect(found.rows.map(\.id) == [1])
        #expect(found.rows.first?.deviceModel == "iPhone15,2")
        // In version order, 3.10 is after 3.4; as text it would not be.
        #expect(try db.searchReports(ReportQuery.parse("version>=3.4"), limit: 10).rows.map(\.id) == [2, 1])
        #expect(try db.searchReports(ReportQuery.parse("version>3.4"), limit: 10).rows.map(\.id) == [1])
        let models = try #require(try db.facets(key: FacetKey("model")))
        #expect(models.total == 4)
        #expect(models.values == [FacetValue(value: nil, count: 2), FacetValue(value: "iPad13,4", count: 1), FacetValue(value: "iPhone15,2", count: 1)])
        #expect(try db.facets(key: FacetKey("os"), top: 1)?.other == 1)
    }
}
