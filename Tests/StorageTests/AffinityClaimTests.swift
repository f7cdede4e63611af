import Foundation
import GRDB
import Storage
import ReportModel
import TestSupport
import Testing

/// Symbol affinity: a remote worker's claim prefers the jobs whose debug files it holds, leaves
/// jobs held by another worker to that worker for `waitMs`, and fences like any other claim.
@Suite struct AffinityClaimTests {
    /// Submits report `n` with the given stored build ids (nil: unknown, as before v7).
    @discardableResult
    static func submit(_ f: Fixture, _ n: Int, buildIds: [String]?, kind: ReportKind = .crash) throws -> Int64 {
        try f.db.submit(NewReport(
            raw: Data("report \(n)".utf8), format: "test", kind: kind, app: "App", version: "1.0",
            buildIds: try buildIds?.map { try BuildID($0) })
        ).reportId
    }

    static func preference(holds: Set<String> = [], elsewhere: Set<String> = [], waitMs: Int64 = 5_000) -> AffinityPreference {
        // The ids the tests write are hex: one that were not would be dropped, and its test would fail.
        AffinityPreference(
            holds: Set(holds.compactMap { try? BuildID($0) }), heldElsewhere: Set(elsewhere.compactMap { try? BuildID($0) }),
            waitMs: waitMs)
    }

    @Test func aHitIsTakenOverAnOlderNeutralJob() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        try Self.submit(f, 1, buildIds: ["aa01"])
        let held = try Self.submit(f, 2, buildIds: ["bb01", "bb02"])
        let claimed = try #require(try f.db.claim(leaseMs: 10_000, affinity: Self.preference(holds: ["bb02"])))
        #expect(claimed.job.reportId == held)
        #expect(claimed.match == .hit)
        #expect(claimed.job.buildIds.map(\.hex) == ["bb01", "bb02"])
    }

    @Test func aHitOfLowerPriorityIsTakenOverANeutralCrash() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        try Self.submit(f, 1, buildIds: ["aa01"], kind: .crash)
        let lag = try Self.submit(f, 2, buildIds: ["bb01"], kind: .lag)
        let claimed = try #require(try f.db.claim(leaseMs: 10_000, affinity: Self.preference(holds: ["bb01"])))
        #expect(claimed.job.reportId == lag)
        #expect(claimed.match == .hit)
    }

    @Test func aNeutralJobIsTakenOverAFallbackNotYetDueAndTheFallbackOnceItIs() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let elsewhere = try Self.submit(f, 1, buildIds: ["cc01"])
        let neutral = try Self.submit(f, 2, buildIds: ["dd01"])
        let preference = Self.preference(holds: ["ee01"], elsewhere: ["cc01"], waitMs: 5_000)
        let first = try #require(try f.db.claim(leaseMs: 10_000, affinity: preference))
        #expect(first.job.reportId == neutral)
        #expect(first.match == .neutral)
        // Only the job another worker holds is left, and it has not waited 5 s yet.
        f.clock.advance(milliseconds: 4_999)
        #expect(try f.db.claim(leaseMs: 10_000, affinity: preference) == nil)
        f.clock.advance(milliseconds: 1)
        let second = try #require(try f.db.claim(leaseMs: 10_000, affinity: preference))
        #expect(second.job.reportId == elsewhere)
        #expect(second.match == .fallback)
        #expect(try f.db.claim(leaseMs: 10_000, affinity: preference) == nil)
    }

    @Test func nothingIsClaimedWhenEveryJobIsHeldElsewhereAndNotDue() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        for n in 0..<3 { try Self.submit(f, n, buildIds: ["ff0\(n)", "1234"]) }
        #expect(try f.db.claim(leaseMs: 10_000, affinity: Self.preference(elsewhere: ["1234"])) == nil)
        #expect(try f.db.stateCounts()[.queued] == 3)
        // A plain claim (a local worker) is not held back.
        #expect(try f.db.claim(leaseMs: 10_000) != nil)
    }

    @Test func unknownAndEmptyBuildIdsAreNeutral() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        try Self.submit(f, 1, buildIds: ["cc01"])
        let unknown = try Self.submit(f, 2, buildIds: nil)
        let none = try Self.submit(f, 3, buildIds: [])
        let preference = Self.preference(holds: ["aa01"], elsewhere: ["cc01"])
        let first = try #require(try f.db.claim(leaseMs: 10_000, affinity: preference))
        #expect(first.job.reportId == unknown)
        #expect(first.match == .neutral)
        #expect(first.job.buildIds == [])
        let second = try #require(try f.db.claim(leaseMs: 10_000, affinity: preference))
        #expect(second.job.reportId == none)
        #expect(second.match == .neutral)
        #expect(second.job.buildIds == [])
        #expect(try f.db.claim(leaseMs: 10_000, affinity: preference) == nil)
    }

    @Test func aJobWaitingForItsBackoffIsNotACandidate() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let id = try Self.submit(f, 1, buildIds: ["bb01"])
        let claimed = try #require(try f.db.claim(leaseMs: 10_000, affinity: Self.preference(holds: ["bb01"])))
        let outcome = try f.db.fail(jobId: claimed.job.jobId, token: claimed.job.leaseToken, failure: .retryable("died"), policy: policy)
        guard case .retryScheduled(let runAfter, _) = outcome else { Issue.record("\(outcome)"); return }
        #expect(try f.db.claim(leaseMs: 10_000, affinity: Self.preference(holds: ["bb01"])) == nil)
        f.clock.advance(milliseconds: runAfter - f.clock.now)
        let again = try #require(try f.db.claim(leaseMs: 10_000, affinity: Self.preference(holds: ["bb01"])))
        #expect(again.job.reportId == id)
        #expect(again.job.attempts == 2)
    }

    @Test func anAffinityClaimIsFencedLikeAPlainOne() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        try Self.submit(f, 1, buildIds: ["bb01"])
        let first = try #require(try f.db.claim(leaseMs: 5_000, affinity: Self.preference(holds: ["bb01"]))).job
        #expect(first.attempts == 1)
        #expect(first.leaseExpiresAt == f.clock.now + 5_000)
        try f.db.heartbeat(jobId: first.jobId, token: first.leaseToken, leaseMs: 5_000)
        #expect(throws: StorageError.staleLease(jobId: first.jobId)) {
            try f.db.heartbeat(jobId: first.jobId, token: first.leaseToken &+ 1, leaseMs: 5_000)
        }
        // The holder goes silent; the job is recovered and claimed again under a new token.
        f.clock.advance(seconds: 6)
        #expect(try f.db.recoverExpiredLeases(maxAttempts: 3).requeued == 1)
        let second = try #require(try f.db.claim(leaseMs: 5_000, affinity: Self.preference(holds: ["bb01"]))).job
        #expect(second.jobId == first.jobId)
        #expect(second.leaseToken != first.leaseToken)
        #expect(second.attempts == 2)
        let result = JobResult(symbolicatedJSON: Data("{}".utf8), status: .complete)
        #expect(throws: StorageError.staleLease(jobId: first.jobId)) {
            try f.db.complete(jobId: first.jobId, token: first.leaseToken, result: result)
        }
        try f.db.complete(jobId: second.jobId, token: second.leaseToken, result: result)
        #expect(try f.db.stateCounts()[.done] == 1)
    }

    @Test func unreadableStoredBytesFailOnceAndTheNextJobIsClaimed() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let bad = try Self.submit(f, 1, buildIds: ["bb01"])
        let good = try Self.submit(f, 2, buildIds: ["bb01"])
        let queue = try DatabaseQueue(path: f.db.path)
        try queue.write { try $0.execute(sql: "UPDATE reports SET raw = x'00112233' WHERE id = ?", arguments: [bad]) }
        try queue.close()
        let claimed = try #require(try f.db.claim(leaseMs: 30_000, affinity: Self.preference(holds: ["bb01"])))
        #expect(claimed.job.reportId == good)
        #expect(claimed.match == .hit)
        let status = try #require(try f.db.jobStatus(reportId: bad))
        #expect(status.state == .failed)
        #expect(status.lastError?.hasPrefix("report \(bad): stored bytes are unreadable") == true)
    }

    @Test func onlyTheFirstCandidatesInClaimOrderAreConsidered() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        for n in 0..<ServiceDatabase.affinityCandidates { try Self.submit(f, n, buildIds: ["cc01"]) }
        let hit = try Self.submit(f, -1, buildIds: ["bb01"])
        let preference = Self.preference(holds: ["bb01"], elsewhere: ["cc01"])
        #expect(try f.db.claim(leaseMs: 10_000, affinity: preference) == nil)
        // One job ahead of it goes, and the hit is in reach.
        _ = try #require(try f.db.claim(leaseMs: 10_000))
        let claimed = try #require(try f.db.claim(leaseMs: 10_000, affinity: preference))
        #expect(claimed.job.reportId == hit)
        #expect(claimed.match == .hit)
    }

    @Test func aPlainClaimCarriesTheBuildIds() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        try Self.submit(f, 1, buildIds: ["0123456789abcdef", "fedcba9876543210"])
        let claimed = try #require(try f.db.claim(leaseMs: 10_000))
        #expect(claimed.buildIds.map(\.hex) == ["0123456789abcdef", "fedcba9876543210"])
        let stored = try DatabaseQueue(path: f.db.path).read {
            try String.fetchOne($0, sql: "SELECT build_ids FROM reports WHERE id = ?", arguments: [claimed.reportId])
        }
        #expect(stored == "0123456789abcdef fedcba9876543210")
    }

    /// A database written before v7 (no `build_ids`, no `workers`) migrates on open; its
    /// reports read as having no known build ids and are claimed as neutral.
    @Test func aV6DatabaseMigratesAndItsReportsHaveNoBuildIds() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let old = try Self.submit(f, 1, buildIds: nil)
        let queue = try DatabaseQueue(path: f.db.path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: """
                ALTER TABLE reports DROP COLUMN build_ids;
                DROP TABLE workers;
                DELETE FROM grdb_migrations WHERE identifier LIKE 'v7%';
                """)
        }
        try queue.close()

        let clock = f.clock
        let reopened = try ServiceDatabase(path: f.db.path, clock: { clock.now })
        let columns = try DatabaseQueue(path: f.db.path).read { try $0.columns(in: "reports").map(\.name) }
        #expect(columns.contains("build_ids"))
        #expect(try reopened.workers() == [])
        let claimed = try #require(try reopened.claim(leaseMs: 10_000, affinity: Self.preference(holds: ["bb01"], elsewhere: ["cc01"])))
        #expect(claimed.job.reportId == old)
        #expect(claimed.job.buildIds == [])
        #expect(claimed.match == .neutral)
    }
}
