import Foundation
import Storage
import ReportModel
import TestSupport
import Testing

/// Group states, regressions, wake-ups and merges, on both backends: every expected state
/// follows from the versions and times the test itself gave its reports, and every count is
/// checked against `COUNT(*)` over `results`, read by the engine's own shell
/// (`GroupLedgerTests.derived`).
@Suite struct TriageTests {
    typealias L = GroupLedgerTests

    static func history(_ f: StoreFixture, _ fingerprint: String) throws -> [String] {
        try f.store.groupHistory(fingerprint: fingerprint).reversed().map(\.action)
    }

    /// Stores a report the way SDK intake does: with its user, device and session.
    @discardableResult
    static func process(_ f: StoreFixture, _ n: Int, version: String, group: GroupKey, user: String) throws -> Int64 {
        let id = try f.store.submit(f.report(n, version: version)).reportId
        try f.store.recordSDKReports(
            SDKRecordRow(namespace: "ns", sdkReportId: "r\(n)", monitorType: "crash", createdTime: f.clock.now, meta: "{}"),
            reportIds: [id],
            session: SessionIdentity(app: "App", version: version, sessionId: "s\(n)", userId: user, deviceId: nil))
        try L.complete(f, group: group)
        f.clock.advance(seconds: 60)
        return id
    }

    @Test(arguments: Backend.allCases) func resolvedInTheNextVersionReopensOnlyForALaterOne(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let a = L.group("a")
        try L.process(f, 1, version: "1.9", group: a)
        try L.process(f, 2, version: "1.10", group: a)
        // Another group of the app saw 1.11: the app's newest version, so "next" means after it.
        try L.process(f, 3, version: "1.11", group: L.group("b"))
        let resolved = try f.store.changeGroupState(fingerprint: "a", .resolve(.nextVersion, version: nil), actor: "alice", note: "fixed in #42")
        #expect(resolved.state == .resolved)
        #expect(resolved.resolvedVersion == "1.11")
        f.clock.advance(seconds: 1)
        try L.process(f, 4, version: "1.11", group: a)
        try L.process(f, 5, version: "1.2", group: a)
        #expect(try f.store.triage(fingerprint: "a")?.state == .resolved)
        let back = try L.process(f, 6, version: "1.12", group: a)
        let t = try #require(try f.store.triage(fingerprint: "a"))
        #expect(t.state == .open)
        #expect(t.regressedVersion == "1.12")
        let entries = try f.store.groupHistory(fingerprint: "a")
        #expect(entries.map(\.action) == ["regressed", "resolved"])
        #expect(entries[0].reportId == back)
        #expect(entries[0].actor == GroupHistoryEntry.automatic)
        #expect(entries[1].actor == "alice")
        #expect(entries[1].note == "fixed in #42")
        try L.expectLedgerMatchesResults(f)
    }

    @Test(arguments: Backend.allCases) func resolvedNowReopensInTheNewestVersionSeenButNotInAnOlderOne(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let a = L.group("a")
        try L.process(f, 1, version: "2.0", group: a)
        try L.process(f, 2, version: "1.0", group: a)
        #expect(try f.store.changeGroupState(fingerprint: "a", .resolve(.now, version: nil), actor: "bob").resolvedVersion == "2.0")
        f.clock.advance(seconds: 1)
        try L.process(f, 3, version: "1.0", group: a)
        try L.process(f, 4, version: "", group: a)
        #expect(try f.store.triage(fingerprint: "a")?.state == .resolved)
        try L.process(f, 5, version: "2.0", group: a)
        #expect(try f.store.triage(fingerprint: "a")?.regressedVersion == "2.0")
    }

    @Test(arguments: Backend.allCases) func resolvedInAVersionComparesInVersionOrder(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let a = L.group("a")
        try L.process(f, 1, version: "3.1", group: a)
        try f.store.changeGroupState(fingerprint: "a", .resolve(.version, version: "3.10"), actor: "bob")
        f.clock.advance(seconds: 1)
        try L.process(f, 2, version: "3.9", group: a)
        #expect(try f.store.triage(fingerprint: "a")?.state == .resolved)
        try L.process(f, 3, version: "3.10.1", group: a)
        #expect(try f.store.triage(fingerprint: "a")?.regressedVersion == "3.10.1")
    }

    @Test(arguments: Backend.allCases) func aReportReceivedBeforeTheResolutionDoesNotReopenIt(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let a = L.group("a")
        try L.process(f, 1, version: "1.0", group: a)
        // Received now, processed only after the resolution (a reprocessing, a slow queue).
        _ = try f.store.submit(NewReport(raw: Data("late".utf8), format: "test", kind: .crash, app: "App", version: "5.0"))
        f.clock.advance(seconds: 1)
        try f.store.changeGroupState(fingerprint: "a", .resolve(.now, version: nil), actor: "bob")
        try L.complete(f, group: a)
        #expect(try f.store.triage(fingerprint: "a")?.state == .resolved)
    }

    @Test(arguments: Backend.allCases) func ignoredUntilMoreReportsWakesOnTheNth(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let a = L.group("a")
        try L.process(f, 1, version: "1.0", group: a)
        try f.store.changeGroupState(fingerprint: "a", .ignore(until: nil, reports: 3, users: nil), actor: "bob")
        f.clock.advance(seconds: 1)
        try L.process(f, 2, version: "1.0", group: a)
        try L.process(f, 3, version: "1.0", group: a)
        let waiting = try #require(try f.store.triage(fingerprint: "a"))
        #expect(waiting.state == .ignored)
        #expect(waiting.ignoreReportsSeen == 2)
        let third = try L.process(f, 4, version: "1.0", group: a)
        #expect(try f.store.triage(fingerprint: "a")?.state == .open)
        let woke = try #require(try f.store.groupHistory(fingerprint: "a").first)
        #expect(woke.action == "woke")
        #expect(woke.detail["reason"] == "reports")
        #expect(woke.reportId == third)
    }

    @Test(arguments: Backend.allCases) func ignoredUntilMoreUsersCountsDistinctUsersNotReports(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let a = L.group("a")
        try Self.process(f, 1, version: "1.0", group: a, user: "before")
        try f.store.changeGroupState(fingerprint: "a", .ignore(until: nil, reports: nil, users: 3), actor: "bob")
        f.clock.advance(seconds: 1)
        // A crash loop on one device: many reports, one user.
        for n in 2...8 { try Self.process(f, n, version: "1.0", group: a, user: "looping") }
        try Self.process(f, 9, version: "1.0", group: a, user: "second")
        #expect(try f.store.triage(fingerprint: "a")?.state == .ignored)
        try Self.process(f, 10, version: "1.0", group: a, user: "third")
        #expect(try f.store.triage(fingerprint: "a")?.state == .open)
        #expect(try f.store.groupHistory(fingerprint: "a").first?.detail["reason"] == "users")
        let g = try #require(try f.store.group(fingerprint: "a"))
        #expect(g.summary.users == 4)
        #expect(g.summary.sessions == 10)
        #expect(g.byVersion == [VersionImpact(version: "1.0", reports: 10, users: 4, sessions: 10)])
    }

    @Test(arguments: Backend.allCases) func ignoredUntilATimeReadsOpenOnceItPassesAndWakesWithTheNextReport(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let a = L.group("a")
        try L.process(f, 1, version: "1.0", group: a)
        try f.store.changeGroupState(fingerprint: "a", .ignore(until: f.clock.now + 3_600_000, reports: nil, users: nil), actor: "bob")
        #expect(try f.store.triage(fingerprint: "a")?.state(at: f.clock.now) == .ignored)
        f.clock.advance(seconds: 7200)
        #expect(try f.store.triage(fingerprint: "a")?.state(at: f.clock.now) == .open)
        try L.process(f, 2, version: "1.0", group: a)
        #expect(try f.store.triage(fingerprint: "a")?.state == .open)
        #expect(try f.store.groupHistory(fingerprint: "a").first?.detail["reason"] == "time")
    }

    @Test(arguments: Backend.allCases) func refusalsNameTheField(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        try L.process(f, 1, version: "1.0", group: L.group("a"))
        #expect(throws: TriageError.noGroup("zz")) { try f.store.changeGroupState(fingerprint: "zz", .reopen, actor: "bob") }
        #expect(throws: TriageError.invalid(field: "until", "must be in the future")) {
            try f.store.changeGroupState(fingerprint: "a", .ignore(until: f.clock.now - 1, reports: nil, users: nil), actor: "bob")
        }
        #expect(throws: TriageError.invalid(field: "assignee", "control characters are not allowed")) {
            try f.store.assignGroup(fingerprint: "a", to: "eve\u{1b}[31m", actor: "bob")
        }
        #expect(throws: TriageError.mergeIntoItself) { try f.store.mergeGroup("a", into: "a", actor: "bob") }
        #expect(throws: TriageError.notMerged("a")) { try f.store.unmergeGroup("a", actor: "bob") }
    }

    @Test(arguments: Backend.allCases) func mergeAndUnmergeKeepEveryCountExact(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let (a, b) = (L.group("a"), L.group("b"))
        for n in 1...3 { try L.process(f, n, version: "1.\(n)", group: a) }
        for n in 4...5 { try L.process(f, n, version: "2.\(n)", group: b) }
        try f.store.mergeGroup("b", into: "a", actor: "alice", note: "same bug")
        try L.expectLedgerMatchesResults(f)
        #expect(try f.store.groups(GroupFilter()).map(\.fingerprint) == ["a"])
        #expect(try f.store.group(fingerprint: "a")?.summary.count == 5)
        #expect(try f.store.group(fingerprint: "a")?.mergedGroups == ["b"])
        // A new report of the merged group is filed under the group it went into.
        try L.process(f, 6, version: "2.6", group: b)
        #expect(try f.store.group(fingerprint: "a")?.summary.count == 6)
        #expect(try f.store.group(fingerprint: "a")?.summary.title == "crash in a")
        try L.expectLedgerMatchesResults(f)
        try f.store.unmergeGroup("b", actor: "alice")
        try L.expectLedgerMatchesResults(f)
        #expect(try f.store.group(fingerprint: "a")?.summary.count == 3)
        #expect(try f.store.group(fingerprint: "b")?.summary.count == 3)
        #expect(try f.store.group(fingerprint: "b")?.summary.versions == ["2.4": 1, "2.5": 1, "2.6": 1])
        #expect(try Self.history(f, "a") == ["merged", "unmerged"])
        #expect(try Self.history(f, "b") == ["merged-into", "unmerged-from"])
    }

    /// New grouping rules give every report a new fingerprint: a merge made under the old rules
    /// still holds under the new ones, whichever group's reports are processed first.
    @Test(arguments: Backend.allCases, [true, false])
    func aMergeFollowsNewGroupingRules(_ backend: Backend, mergedGroupFirst: Bool) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let (a, b) = (L.group("a"), L.group("b"))
        var ids: [String: [Int64]] = [:]
        for n in 1...3 { ids["a", default: []].append(try L.process(f, n, version: "1.0", group: a)) }
        for n in 4...5 { ids["b", default: []].append(try L.process(f, n, version: "1.0", group: b)) }
        try L.process(f, 6, version: "1.0", group: L.group("c"))
        try f.store.mergeGroup("b", into: "a", actor: "alice")
        // "Rules v2": a → a2, b → b2, c → c2.
        let order = mergedGroupFirst ? ["b", "a"] : ["a", "b"]
        for name in order {
            for id in ids[name]! {
                _ = try f.store.enqueueReprocessing(reportId: id)
                try L.complete(f, group: L.group(name + "2"))
                try L.expectLedgerMatchesResults(f)
            }
        }
        _ = try f.store.requeueReports(inGroup: "c")
        try L.complete(f, group: L.group("c2"))
        let groups = try f.store.groups(GroupFilter())
        #expect(groups.map(\.count).sorted() == [1, 5])
        #expect(Set(groups.map(\.fingerprint)) == ["a2", "c2"])
        // And new reports of the merged crash under the new rules.
        try L.process(f, 7, version: "1.0", group: L.group("b2"))
        #expect(try f.store.group(fingerprint: "a2")?.summary.count == 6)
        try L.expectLedgerMatchesResults(f)
    }
}
