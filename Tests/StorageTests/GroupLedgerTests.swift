import Foundation
import Storage
import ReportModel
import TestSupport
import Testing

/// The groups table against the results it summarises, on both backends: every count is
/// re-derived from the `results` rows with plain SQL, through the engine's own shell, after
/// each step.
@Suite struct GroupLedgerTests {
    static func group(_ name: String) -> GroupKey {
        GroupKey(fingerprint: name, kind: .crash, title: "crash in \(name)", rulesVersion: 1, frames: ["App!\(name)"])
    }

    /// Submits a report of `version` and completes its job with `group`.
    @discardableResult
    static func process(_ f: StoreFixture, _ n: Int, version: String?, group: GroupKey?, missing: [String] = []) throws -> Int64 {
        try process(f.store, f.clock, n, version: version, group: group, missing: missing)
    }

    /// `process` on the SQLite-only `Fixture` of the older suites.
    @discardableResult
    static func process(_ f: Fixture, _ n: Int, version: String?, group: GroupKey?, missing: [String] = []) throws -> Int64 {
        try process(f.db, f.clock, n, version: version, group: group, missing: missing)
    }

    static func process(
        _ store: any ServiceStore, _ clock: ManualClock, _ n: Int, version: String?, group: GroupKey?, missing: [String]
    ) throws -> Int64 {
        let id = try store.submit(NewReport(raw: Data("report \(n)".utf8), format: "test", kind: .crash, app: "App", version: version)).reportId
        try complete(store, group: group, missing: missing)
        clock.advance(seconds: 60)
        return id
    }

    static func complete(_ f: StoreFixture, group: GroupKey?, missing: [String] = []) throws {
        try complete(f.store, group: group, missing: missing)
    }

    static func complete(_ f: Fixture, group: GroupKey?, missing: [String] = []) throws {
        try complete(f.db, group: group, missing: missing)
    }

    static func complete(_ store: any ServiceStore, group: GroupKey?, missing: [String] = []) throws {
        let job = try #require(try store.claim(leaseMs: 30_000))
        try store.complete(
            jobId: job.jobId, token: job.leaseToken,
            result: JobResult(
                symbolicatedJSON: Data("{}".utf8), status: missing.isEmpty ? .complete : .partial,
                group: group,
                missingImages: try missing.map { MissingDebugFile(buildID: try BuildID($0), imageName: "Lib\($0.prefix(2))") }))
    }

    /// A number from the oracle's JSON (the shells print every integer as a JSON number).
    static func int(_ value: Any?) throws -> Int {
        guard let n = value as? Int else { throw TestSupportError("not an integer: \(String(describing: value))") }
        return n
    }

    /// Counts straight from `results` joined with `reports`, read by `sql` (the engine's own
    /// shell): the oracle for the ledger.
    static func derived(_ sql: (String) throws -> [[String: Any]]) throws
        -> [String: (count: Int, versions: [String: Int], first: Int64, last: Int64)]
    {
        var out: [String: (Int, [String: Int], Int64, Int64)] = [:]
        for row in try sql(
            """
            SELECT s.fingerprint AS f, COALESCE(r.version, '') AS v, COUNT(*) AS n,
                   MIN(r.received_at) AS first_at, MAX(r.received_at) AS last_at
            FROM results s JOIN reports r ON r.id = s.report_id WHERE s.fingerprint IS NOT NULL
            GROUP BY s.fingerprint, COALESCE(r.version, '')
            """)
        {
            let key = try #require(row["f"] as? String)
            let n = try int(row["n"])
            var entry = out[key] ?? (0, [:], Int64.max, Int64.min)
            entry.0 += n
            entry.1[try #require(row["v"] as? String)] = n
            entry.2 = min(entry.2, Int64(try int(row["first_at"])))
            entry.3 = max(entry.3, Int64(try int(row["last_at"])))
            out[key] = entry
        }
        return out
    }

    static func expectLedgerMatchesResults(_ f: StoreFixture, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try expectLedgerMatchesResults(f.store, sql: f.sql, sourceLocation: sourceLocation)
    }

    /// `expectLedgerMatchesResults` on the SQLite-only `Fixture` of the older suites.
    static func expectLedgerMatchesResults(_ f: Fixture, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try expectLedgerMatchesResults(f.db, sql: { try sqlite(f.db.path, $0) }, sourceLocation: sourceLocation)
    }

    static func expectLedgerMatchesResults(
        _ store: any ServiceStore, sql: (String) throws -> [[String: Any]], sourceLocation: SourceLocation
    ) throws {
        let groups = try store.groups(GroupFilter(limit: 100))
        let truth = try derived(sql)
        #expect(Set(groups.map(\.fingerprint)) == Set(truth.keys), sourceLocation: sourceLocation)
        for g in groups {
            let t = try #require(truth[g.fingerprint])
            #expect(g.count == t.count, "\(g.fingerprint) count", sourceLocation: sourceLocation)
            #expect(g.versions == t.versions, "\(g.fingerprint) versions", sourceLocation: sourceLocation)
            #expect(Int64((g.firstSeen.timeIntervalSince1970 * 1000).rounded()) == t.first, sourceLocation: sourceLocation)
            #expect(Int64((g.lastSeen.timeIntervalSince1970 * 1000).rounded()) == t.last, sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: Backend.allCases) func countsVersionsAndSeenTimesStayExactWhenReportsMove(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let a = Self.group("aaaa"), b = Self.group("bbbb")
        let first = try Self.process(f, 1, version: "1.0", group: a, missing: ["cafe01"])
        try Self.process(f, 2, version: "1.1", group: a)
        try Self.process(f, 3, version: "1.1", group: a)
        try Self.process(f, 4, version: nil, group: b)
        try Self.expectLedgerMatchesResults(f)
        let top = try f.store.groups(GroupFilter())
        #expect(top.map(\.fingerprint) == ["aaaa", "bbbb"])
        #expect(top[0].count == 3 && top[0].versions == ["1.0": 1, "1.1": 2])
        #expect(top[0].representativeReportId == first)

        // Report 1 is reprocessed (its debug file arrived) and moves from a to b.
        #expect(try f.store.requeueReports(missing: [try BuildID("cafe01")]) == [first])
        #expect(try f.store.requeueReports(missing: [try BuildID("cafe01")]).isEmpty, "already queued: not queued twice")
        try Self.complete(f, group: b)
        try Self.expectLedgerMatchesResults(f)
        let moved = try f.store.groups(GroupFilter())
        #expect(moved.first { $0.fingerprint == "aaaa" }?.versions == ["1.1": 2])
        #expect(moved.first { $0.fingerprint == "aaaa" }?.representativeReportId != first)
        #expect(moved.first { $0.fingerprint == "bbbb" }?.count == 2)

        // Reprocessed into the same group: nothing changes. Into no group: it leaves; empty groups go.
        try f.store.enqueueReprocessing(reportId: first)
        try Self.complete(f, group: b)
        try Self.expectLedgerMatchesResults(f)
        for id in [first] {
            try f.store.enqueueReprocessing(reportId: id)
            try Self.complete(f, group: nil)
        }
        try Self.expectLedgerMatchesResults(f)
        #expect(try f.store.groups(GroupFilter()).first { $0.fingerprint == "bbbb" }?.count == 1)
    }

    /// One batch of completions mixing joins to an existing group and to a new one, a move
    /// between groups in the middle of them, several versions and a report left ungrouped: the
    /// joins are summed per group (`PendingJoins`), and the ledger must still match its results
    /// and hold what one completion per transaction, in the same order, leaves: the last
    /// joiner's title, the first joiner's report as representative.
    @Test(arguments: Backend.allCases) func aBatchOfJoinsAndMovesLeavesWhatOneCompletionAtATimeLeaves(_ backend: Backend) throws {
        func key(_ name: String, _ n: Int) -> GroupKey {
            GroupKey(fingerprint: name, kind: .crash, title: "crash in \(name) as report \(n) saw it", rulesVersion: 1, frames: ["App!\(name)"])
        }
        // (report number, version, group): reports 1-3 first, one by one, then the batch.
        let before: [(Int, String?, GroupKey?)] = [(1, "1.0", key("aaaa", 1)), (2, "1.1", key("aaaa", 2)), (3, nil, key("bbbb", 3))]
        let fresh: [(Int, String?, GroupKey?)] = [
            (4, "1.1", key("aaaa", 4)), (5, "2.0", key("cccc", 5)), (6, "2.0", key("aaaa", 6)), (7, "2.0", key("cccc", 7)),
            (8, nil, key("aaaa", 8)), (9, "2.0", nil),
        ]
        /// Report 1 reprocessed into group cccc, committed between the joins of reports 5 and 6.
        let moveAfter = 2

        /// The fixture, its groups, and each report number's id.
        func run(batched: Bool) throws -> (StoreFixture, [GroupSummary], [Int: Int64]) {
            let f = try StoreFixture(backend)
            var ids: [Int: Int64] = [:]
            for (n, version, group) in before { ids[n] = try Self.process(f, n, version: version, group: group) }
            for (n, version, _) in fresh {
                ids[n] = try f.store.submit(NewReport(raw: Data("report \(n)".utf8), format: "test", kind: .crash, app: "App", version: version)).reportId
                f.clock.advance(seconds: 60)
            }
            try f.store.enqueueReprocessing(reportId: ids[1]!)
            let jobs = try f.store.claim(leaseMs: 30_000, limit: 16)
            #expect(jobs.count == fresh.count + 1)
            func completion(reportId: Int64, _ group: GroupKey?) throws -> Completion {
                let job = try #require(jobs.first { $0.reportId == reportId })
                return Completion(jobId: job.jobId, token: job.leaseToken, result: JobResult(
                    symbolicatedJSON: Data("{}".utf8), status: .complete, group: group))
            }
            var batch = try fresh.map { try completion(reportId: ids[$0.0]!, $0.2) }
            batch.insert(try completion(reportId: ids[1]!, key("cccc", 1)), at: moveAfter)
            if batched {
                #expect(try f.store.complete(batch) == Array(repeating: .stored, count: batch.count))
            } else {
                for c in batch { #expect(try f.store.complete([c]) == [.stored]) }
            }
            try Self.expectLedgerMatchesResults(f)
            return (f, try f.store.groups(GroupFilter(limit: 100)), ids)
        }

        let (batchedFixture, batched, ids) = try run(batched: true)
        defer { batchedFixture.remove() }
        let (oneByOneFixture, oneByOne, oneByOneIds) = try run(batched: false)
        defer { oneByOneFixture.remove() }
        // Each run has a database of its own, so the same reports have the same ids in both and
        // the groups (representatives included) compare whole.
        #expect(ids == oneByOneIds)
        #expect(batched == oneByOne)
        let byName = Dictionary(uniqueKeysWithValues: batched.map { ($0.fingerprint, $0) })
        #expect(byName["aaaa"]?.count == 4 && byName["aaaa"]?.versions == ["1.1": 2, "2.0": 1, "": 1])
        #expect(byName["aaaa"]?.title == "crash in aaaa as report 8 saw it")
        #expect(byName["aaaa"]?.representativeReportId == ids[2], "report 1 left; the lowest member remains")
        #expect(byName["cccc"]?.count == 3 && byName["cccc"]?.title == "crash in cccc as report 7 saw it")
        #expect(byName["cccc"]?.representativeReportId == ids[5], "the first to join the new group")
        #expect(byName["bbbb"]?.count == 1)
    }

    @Test(arguments: Backend.allCases) func filtersCountOnlyMatchingReports(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let a = Self.group("aaaa"), b = Self.group("bbbb")
        let one = try Self.process(f, 1, version: "1.0", group: a)
        let two = try Self.process(f, 2, version: "1.0", group: a)
        let cutoff = f.clock.now
        try Self.process(f, 3, version: "2.0", group: b)
        try Self.process(f, 4, version: "2.0", group: b)
        let five = try Self.process(f, 5, version: "2.0", group: a)
        #expect(try f.store.groups(GroupFilter(version: "1.0")).map { [$0.fingerprint: $0.count] } == [["aaaa": 2]])
        #expect(try f.store.groups(GroupFilter(since: cutoff)).map { [$0.fingerprint: $0.count] } == [["bbbb": 2], ["aaaa": 1]])
        #expect(try f.store.groups(GroupFilter(kind: .lag)).isEmpty)
        #expect(try f.store.groups(GroupFilter(limit: 1)).map(\.fingerprint) == ["aaaa"])
        let detail = try #require(try f.store.group(fingerprint: "aaa"))
        #expect(detail.summary.count == 3 && detail.latestReportIds == [five, two, one])
        #expect(try f.store.group(fingerprint: "ffff") == nil)
    }

    /// Each build id's status and detail are those of its latest processing, its groups the
    /// distinct groups of the reports that lacked it; a status an upload does not fix is stored
    /// as notFound. Expected values are the ones this test recorded.
    @Test(arguments: Backend.allCases) func missingSymbolsCarryTheLatestStatusAndTheGroupsTheyBlock(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        func process(_ n: Int, group: String, _ files: [MissingDebugFile]) throws {
            _ = try f.store.submit(NewReport(raw: Data("status \(n)".utf8), format: "test", kind: .crash, app: "App", version: "1.0"))
            let job = try #require(try f.store.claim(leaseMs: 30_000))
            try f.store.complete(
                jobId: job.jobId, token: job.leaseToken,
                result: JobResult(symbolicatedJSON: Data("{}".utf8), status: .partial, group: Self.group(group), missingImages: files))
            f.clock.advance(seconds: 60)
        }
        let (a, b) = (try BuildID("aa11"), try BuildID("bb22"))
        try process(1, group: "g1", [MissingDebugFile(buildID: a, imageName: "LibA", status: .notFound)])
        try process(2, group: "g2", [MissingDebugFile(buildID: a, imageName: "LibA", status: .unreadable, detail: "cut short")])
        try process(3, group: "g2", [
            MissingDebugFile(buildID: a, imageName: "LibA", status: .unreadable, detail: "cut short"),
            MissingDebugFile(buildID: b, imageName: "LibB", status: .deviceSymbolsOnly),
        ])
        let missing = Dictionary(uniqueKeysWithValues: try f.store.missingSymbols().map { ($0.file.buildID, $0) })
        #expect(missing[a]?.file.status == .unreadable && missing[a]?.file.detail == "cut short")
        #expect(missing[a]?.reportCount == 3 && missing[a]?.groupCount == 2)
        #expect(missing[b]?.file.status == .notFound && missing[b]?.reportCount == 1 && missing[b]?.groupCount == 1)
        #expect(try f.sql("SELECT DISTINCT status FROM missing_symbols").compactMap { $0["status"] as? String }.sorted()
            == ["notFound", "unreadable"])
    }

    @Test(arguments: Backend.allCases) func missingSymbolsListWhatReportsLackUntilTheyAreReprocessed(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        try Self.process(f, 1, version: "1.0", group: nil, missing: ["aa11", "bb22"])
        try Self.process(f, 2, version: "1.0", group: nil, missing: ["aa11"])
        let missing = try f.store.missingSymbols()
        #expect(missing.map(\.file.buildID.hex) == ["aa11", "bb22"])
        #expect(missing.map(\.reportCount) == [2, 1])
        #expect(missing.first?.file.imageName == "Libaa")
        // Ids the store has since gained are left out.
        #expect(try f.store.missingSymbols { $0.file.buildID.hex == "aa11" }.map(\.file.buildID.hex) == ["bb22"])
        #expect(try f.store.requeueReports(missing: [try BuildID("aa11")]).count == 2)
        try Self.complete(f, group: nil)
        try Self.complete(f, group: nil)
        #expect(try f.store.missingSymbols().isEmpty)
    }
}
