import Alerts
import Foundation
import Storage
import Logging
import ReportModel
import TestSupport
import Testing

/// The rules against a real database, on each backend: reports submitted and completed through
/// Storage, a clock the test moves, and events read back from `alert_events`.
@Suite struct RuleEvaluatorTests {
    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var ms: Int64
        init(_ ms: Int64) { self.ms = ms }
        var now: Int64 { lock.withLock { ms } }
        func advance(minutes: Int64) { lock.withLock { ms += minutes * 60_000 } }
    }

    /// A database on `backend`, a clock starting on an hour, and a counter that keeps report bytes distinct.
    final class Store {
        let fixture: AlertStoreFixture
        let clock = Clock(1_800_000_000_000 / 3_600_000 * 3_600_000)
        let db: any ServiceStore
        var n = 0
        /// The id the store gave the last report `add` submitted.
        var lastReportId: Int64 = 0

        init(_ backend: Backend) throws {
            let clock = clock
            fixture = try AlertStoreFixture(backend, clock: { clock.now })
            db = fixture.store
        }

        deinit { fixture.remove() }

        /// `count` reports of group `name` in `version`, received now, each completed at once.
        func add(_ name: String, version: String, count: Int = 1, kind: ReportKind = .crash, app: String = "App") throws {
            for _ in 0..<count {
                n += 1
                lastReportId = try db.submit(
                    NewReport(raw: Data("report \(n)".utf8), format: "test", kind: kind, app: app, version: version)
                ).reportId
                let job = try #require(try db.claim(leaseMs: 30_000))
                try db.complete(
                    jobId: job.jobId, token: job.leaseToken,
                    result: JobResult(
                        symbolicatedJSON: Data("{}".utf8), status: .complete,
                        group: GroupKey(fingerprint: name, kind: kind, title: "\(kind) in \(name)", rulesVersion: 1, frames: [name]),
                        missingImages: []))
            }
        }

        /// One evaluation, as the service runs it; returns every event so far as (rule, group, scope).
        @discardableResult
        func evaluate(_ rules: String) throws -> [String] {
            let config = try AlertRulesParser.parse(Data(rules.utf8), file: "rules.json")
            try AlertService(db: db, configuration: config, logger: Logger(label: "test"), batch: 3).evaluate()
            return try db.recentAlertEvents(limit: 1000).reversed().map { "\($0.rule) \($0.fingerprint) \($0.scope)" }
        }
    }

    static func rules(_ rule: String) -> String {
        """
        {"targets": {"h": {"type": "webhook", "url": "http://127.0.0.1:9/"}},
         "rules": [\(rule)]}
        """
    }

    @Test(arguments: Backend.allCases) func newGroupOncePerGroupAndNotForHistory(_ backend: Backend) throws {
        let s = try Store(backend)
        let rules = Self.rules(#"{"name": "new", "kind": "new_group", "severity": "info", "targets": ["h"]}"#)
        // Stored before alerts were enabled: history, not news.
        try s.add("old", version: "1.0", count: 2)
        #expect(try s.evaluate(rules) == [])
        try s.add("old", version: "1.1")
        try s.add("a", version: "1.0", count: 4)
        try s.add("b", version: "1.0")
        // Batches of 3: "a" spans two of them and is still new once.
        #expect(try s.evaluate(rules) == ["new a ", "new b "])
        try s.add("a", version: "1.2")
        #expect(try s.evaluate(rules) == ["new a ", "new b "])
        // Deliveries: one per event and target.
        #expect(try s.db.recentAlertEvents(limit: 10).map { $0.deliveries.map(\.target) } == [["h"], ["h"]])
    }

    @Test(arguments: Backend.allCases) func regressionNeedsAVersionWithoutTheGroupInBetween(_ backend: Backend) throws {
        let s = try Store(backend)
        let rules = Self.rules(#"{"name": "back", "kind": "back_after_gap", "severity": "info", "targets": ["h"], "minGapReports": 2}"#)
        s.placeCursor(rules)
        try s.add("g", version: "1.9")
        try s.add("other", version: "1.10")  // one report: below minGapReports, not yet a gap
        try s.add("g", version: "1.11")
        #expect(try s.evaluate(rules) == [])
        try s.add("other", version: "1.12", count: 2)  // a gap of 2 reports without g
        try s.add("g", version: "2.0")
        // Numeric order: 1.11 < 1.12 < 2.0, so 2.0 is a regression of g (last in 1.11, absent from 1.12).
        #expect(try s.evaluate(rules) == ["back g 2.0"])
        // More of g in 2.0, and g in an old version: nothing new.
        try s.add("g", version: "2.0", count: 2)
        try s.add("g", version: "1.0")
        #expect(try s.evaluate(rules) == ["back g 2.0"])
        let payload = try #require(try s.db.recentAlertEvents(limit: 1).first)
        #expect(payload.kind == "back_after_gap")
    }

    @Test(arguments: Backend.allCases) func regressionEventCarriesPreviousAndGapVersions(_ backend: Backend) throws {
        let s = try Store(backend)
        let rules = Self.rules(#"{"name": "back", "kind": "back_after_gap", "severity": "error", "targets": ["h"]}"#)
        s.placeCursor(rules)
        try s.add("g", version: "3.0")
        try s.add("x", version: "3.1")
        try s.add("y", version: "3.2")
        try s.add("g", version: "3.3")
        #expect(try s.evaluate(rules) == ["back g 3.3"])
        let job = try #require(try s.db.takeDueAlertDeliveries(limit: 1, leaseMs: 1000).first)
        let event = try AlertEvent.decode(job.payload)
        #expect(event.previousVersion == "3.0")
        #expect(event.versionsWithout == ["3.1", "3.2"])
        #expect(event.version == "3.3")
        #expect(event.severity == "error")
        #expect(event.summary == "Back after a gap in App 3.3: crash in g is back (last seen in 3.0, not in 3.1, 3.2)")
    }

    /// `regression`: only a group the team resolved, reopened by a report of a version at or
    /// after the resolution; once per reopening, however many reports follow.
    @Test(arguments: Backend.allCases) func regressionFiresOnceWhenAResolvedGroupComesBack(_ backend: Backend) throws {
        let s = try Store(backend)
        let rules = Self.rules(#"{"name": "reg", "kind": "regression", "severity": "error", "targets": ["h"]}"#)
        s.placeCursor(rules)
        try s.add("g", version: "2.0")
        try s.add("never-resolved", version: "1.0")
        try s.add("never-resolved", version: "3.0")
        #expect(try s.evaluate(rules) == [])
        try s.db.changeGroupState(fingerprint: "g", .resolve(.nextVersion, version: nil), actor: "alice")
        s.clock.advance(minutes: 1)
        try s.add("g", version: "2.0")
        #expect(try s.evaluate(rules) == [])
        try s.add("g", version: "3.1", count: 3)
        let entry = try #require(try s.db.groupHistory(fingerprint: "g").first { $0.action == "regressed" })
        #expect(try s.evaluate(rules) == ["reg g reopened-\(entry.id)"])
        let event = try AlertEvent.decode(try #require(try s.db.takeDueAlertDeliveries(limit: 1, leaseMs: 1000).first).payload)
        #expect(event.kind == "regression")
        #expect(event.version == "3.1")
        #expect(event.previousVersion == "3.0")
        #expect(event.summary == "Regression in App 3.1: crash in g was resolved (resolved in 3.0) and is back")
        // Resolved again and back again: a second event.
        try s.db.changeGroupState(fingerprint: "g", .resolve(.now, version: nil), actor: "alice")
        s.clock.advance(minutes: 1)
        try s.add("g", version: "3.1")
        #expect(try s.evaluate(rules).count == 2)
    }

    /// Launches of `version` by `users` distinct users (the version's users, as release health counts them).
    static func launch(_ s: Store, app: String = "App", version: String, users: Range<Int>, sessionsEach: Int = 1) throws {
        var launches: [SessionLaunch] = []
        for u in users {
            for k in 0..<sessionsEach {
                launches.append(SessionLaunch(
                    namespace: "ns", sdkReportId: "boot-\(version)-\(u)-\(k)", createdTime: s.clock.now, app: app, version: version,
                    osVersion: "", deviceModel: "", userKey: "u:\(u)"))
            }
        }
        _ = try s.db.recordLaunches(launches)
    }

    /// A crash of group `name` from user `user` in session `session`, as SDK intake stores it.
    static func crash(_ s: Store, _ name: String, version: String, user: Int, session: String) throws {
        try s.add(name, version: version)
        try s.db.recordSDKReports(
            SDKRecordRow(namespace: "ns", sdkReportId: "crash-\(s.n)", monitorType: "crash", createdTime: s.clock.now, meta: "{}"),
            reportIds: [s.lastReportId],
            session: SessionIdentity(app: "App", version: version, sessionId: session, userId: "\(user)", deviceId: nil))
    }

    /// `velocity`: distinct users in the window against the version's users (Crashlytics'
    /// definition); a crash loop on one device is one user.
    @Test(arguments: Backend.allCases) func velocityCountsUsersInTheWindowAgainstTheVersionsUsers(_ backend: Backend) throws {
        let s = try Store(backend)
        let rules = Self.rules(
            #"{"name": "fast", "kind": "velocity", "severity": "critical", "targets": ["h"], "usersPercent": 10, "minUsers": 3, "windowMinutes": 30}"#)
        s.placeCursor(rules)
        // 40 users launched 2.0: 10% is 4 users.
        try Self.launch(s, version: "2.0", users: 0..<40)
        for n in 0..<10 { try Self.crash(s, "g", version: "2.0", user: 0, session: "loop-\(n)") }
        #expect(try s.evaluate(rules) == [], "ten crashes of one user are one user")
        s.clock.advance(minutes: 40)
        for u in 1...3 { try Self.crash(s, "g", version: "2.0", user: u, session: "s\(u)") }
        #expect(try s.evaluate(rules) == [], "3 users in the window, user 0's crashes are 40 minutes old")
        s.clock.advance(minutes: 10)
        try Self.crash(s, "g", version: "2.0", user: 4, session: "s4")
        #expect(try s.evaluate(rules) == ["fast g 2.0"])
        let event = try AlertEvent.decode(try #require(try s.db.takeDueAlertDeliveries(limit: 1, leaseMs: 1000).first).payload)
        #expect(event.kind == "velocity")
        #expect(event.counts.users == 4)
        #expect(event.counts.versionUsers == 40)
        for u in 5...9 { try Self.crash(s, "g", version: "2.0", user: u, session: "s\(u)") }
        #expect(try s.evaluate(rules) == ["fast g 2.0"], "once per group and version")
    }

    /// `release_health`: crash-free sessions of a version under the target, once the version
    /// has the minimum number of sessions; numbers as `stackline releases` counts them.
    @Test(arguments: Backend.allCases) func releaseHealthFiresWhenCrashFreeSessionsFallBelowTheTarget(_ backend: Backend) throws {
        let s = try Store(backend)
        let rules = Self.rules(
            #"{"name": "health", "kind": "release_health", "severity": "error", "targets": ["h"], "crashFreeSessions": 0.95, "minSessions": 50}"#)
        s.placeCursor(rules)
        // 2.0: 40 sessions so far (under the minimum) and 4 crashed ones: no event yet.
        try Self.launch(s, version: "2.0", users: 0..<40)
        for u in 0..<4 { try Self.crash(s, "g", version: "2.0", user: u, session: "boot-\(u)") }
        #expect(try s.evaluate(rules) == [])
        // 80 sessions, 4 crashed: 95% is not below 95%.
        try Self.launch(s, version: "2.0", users: 40..<80)
        try Self.crash(s, "g", version: "2.0", user: 0, session: "boot-0")
        #expect(try s.evaluate(rules) == [])
        // A fifth crashed session: 75/80 = 93.75%.
        try Self.crash(s, "h", version: "2.0", user: 5, session: "boot-5")
        #expect(try s.evaluate(rules) == ["health h 2.0|sessions"])
        let event = try AlertEvent.decode(try #require(try s.db.takeDueAlertDeliveries(limit: 1, leaseMs: 1000).first).payload)
        #expect(event.counts.sessions == 80)
        #expect(event.counts.crashFree == 0.9375)
        #expect(event.counts.threshold == 0.95)
        #expect(event.summary == "Release health of App 2.0: crash-free sessions 93.8% (target 95%, 80 sessions); latest crash: crash in h")
    }

    @Test(arguments: Backend.allCases) func spikeAgainstABusyWeek(_ backend: Backend) throws {
        let s = try Store(backend)
        let rules = Self.rules(
            #"{"name": "burst", "kind": "spike", "severity": "warning", "targets": ["h"], "multiplier": 3, "minCount": 5, "baselineHours": 24}"#)
        s.placeCursor(rules)
        // 24 hours of history: 2 reports an hour in 13 of them, 0 in 11 (median 2).
        for hour in 0..<24 {
            if hour % 2 == 0 || hour == 23 { try s.add("g", version: "1") ; try s.add("g", version: "1") }
            s.clock.advance(minutes: 60)
        }
        #expect(try s.evaluate(rules) == [])
        // This hour: 6 reports is 3 × 2, not more: no spike. The 7th is.
        try s.add("g", version: "1", count: 6)
        #expect(try s.evaluate(rules) == [])
        try s.add("g", version: "1")
        let hour = String(s.clock.now)
        #expect(try s.evaluate(rules) == ["burst g \(hour)"])
        try s.add("g", version: "1", count: 5)
        #expect(try s.evaluate(rules) == ["burst g \(hour)"])
        let event = try AlertEvent.decode(try #require(try s.db.takeDueAlertDeliveries(limit: 1, leaseMs: 1000).first).payload)
        #expect(event.counts.window == 7)
        #expect(event.counts.baselineMedian == 2)
        #expect(event.counts.threshold == 6)
    }

    @Test(arguments: Backend.allCases) func spikeOfAQuietGroupNeedsTheMinimum(_ backend: Backend) throws {
        let s = try Store(backend)
        let rules = Self.rules(#"{"name": "burst", "kind": "spike", "severity": "info", "targets": ["h"], "minCount": 4}"#)
        s.placeCursor(rules)
        try s.add("g", version: "1", count: 3)
        #expect(try s.evaluate(rules) == [])
        // The next hour starts from zero again.
        s.clock.advance(minutes: 60)
        try s.add("g", version: "1", count: 3)
        #expect(try s.evaluate(rules) == [])
        try s.add("g", version: "1")
        #expect(try s.evaluate(rules) == ["burst g \(s.clock.now)"])
    }

    @Test(arguments: Backend.allCases) func hangBudgetPerVersionForLagGroupsOnly(_ backend: Backend) throws {
        let s = try Store(backend)
        let rules = Self.rules(#"{"name": "slow", "kind": "hang_budget", "severity": "info", "targets": ["h"], "maxCount": 2}"#)
        s.placeCursor(rules)
        try s.add("crash", version: "1", count: 5)
        try s.add("hang", version: "1", count: 2, kind: .lag)
        #expect(try s.evaluate(rules) == [])
        try s.add("hang", version: "1", kind: .lag)
        try s.add("hang", version: "2", count: 2, kind: .lag)
        #expect(try s.evaluate(rules) == ["slow hang 1"])
        try s.add("hang", version: "2", kind: .lag)
        try s.add("hang", version: "1", kind: .lag)
        #expect(try s.evaluate(rules) == ["slow hang 1", "slow hang 2"])
    }

    @Test(arguments: Backend.allCases) func ruleFiltersByApp(_ backend: Backend) throws {
        let s = try Store(backend)
        let rules = Self.rules(#"{"name": "new", "kind": "new_group", "severity": "info", "targets": ["h"], "app": "Mine"}"#)
        s.placeCursor(rules)
        try s.add("theirs", version: "1", app: "Theirs")
        try s.add("mine", version: "1", app: "Mine")
        #expect(try s.evaluate(rules) == ["new mine "])
    }
}

extension RuleEvaluatorTests.Store {
    /// The first evaluation on an empty database: it only places the cursor.
    func placeCursor(_ rules: String) {
        _ = try? evaluate(rules)
    }
}
