import Foundation
import GRDB
import Storage
import ReportModel
import TestSupport
import Testing

/// Claims of several jobs per statement and completions of several jobs per transaction keep
/// what single ones guarantee: claim order, one token per lease, fencing per completion, and
/// the group ledger exact.
@Suite struct BatchingTests {
    static func result(_ who: String, group: GroupKey? = GroupLedgerTests.group("g")) -> JobResult {
        JobResult(symbolicatedJSON: Data("{\"who\":\"\(who)\"}".utf8), status: .complete, group: group)
    }

    /// Crashes and lags of mixed priority, some waiting for a backoff.
    static func mixedQueue(_ f: Fixture) throws {
        for n in 0..<12 {
            _ = try f.db.submit(f.report(n, kind: n % 3 == 0 ? .lag : .crash))
        }
    }

    @Test func aClaimOfNReturnsNDistinctJobsInClaimOrderWithDistinctTokens() throws {
        // Two identical queues: one drained by single claims (the order a claim has always
        // had), the other by claims of four.
        let single = try Fixture(), batched = try Fixture()
        defer { single.dir.remove(); batched.dir.remove() }
        try Self.mixedQueue(single)
        try Self.mixedQueue(batched)
        var order: [Int64] = []
        while let job = try single.db.claim(leaseMs: 30_000) { order.append(job.reportId) }
        #expect(order.count == 12)

        var claimed: [ClaimedJob] = []
        while true {
            let batch = try batched.db.claim(leaseMs: 30_000, limit: 4)
            if batch.isEmpty { break }
            #expect(batch.count == 4)
            claimed += batch
        }
        #expect(claimed.map(\.reportId) == order, "a batch comes in claim order (priority, then id)")
        #expect(Set(claimed.map(\.jobId)).count == 12)
        #expect(Set(claimed.map(\.leaseToken)).count == 12, "each lease has its own token")
        #expect(claimed.allSatisfy { $0.attempts == 1 && $0.raw == Data("report \($0.reportId - 1)".utf8) })
        #expect(try batched.db.stateCounts()[.running] == 12)
        // Each token fences its own job only: it completes its job and no other.
        let (a, b) = (claimed[0], claimed[1])
        #expect(throws: StorageError.staleLease(jobId: a.jobId)) {
            try batched.db.complete(jobId: a.jobId, token: b.leaseToken, result: Self.result("wrong token"))
        }
        try batched.db.complete(jobId: a.jobId, token: a.leaseToken, result: Self.result("a"))
        #expect(try batched.db.stateCounts()[.done] == 1)
    }

    @Test func aClaimTakesWhatIsRunnableAndNoMore() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        for n in 0..<3 { _ = try f.db.submit(f.report(n)) }
        // One job backs off: it is not runnable and must not be leased with the others.
        let first = try #require(try f.db.claim(leaseMs: 30_000))
        _ = try f.db.fail(jobId: first.jobId, token: first.leaseToken, failure: .retryable("again"), policy: policy)
        let batch = try f.db.claim(leaseMs: 30_000, limit: 8)
        #expect(batch.map(\.jobId) == [first.jobId + 1, first.jobId + 2])
        #expect(try f.db.claim(leaseMs: 30_000, limit: 8).isEmpty)
    }

    @Test func aBatchWithOneStaleCompletionCommitsTheOthersAndRefusesIt() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        for n in 0..<5 { _ = try f.db.submit(f.report(n)) }
        let jobs = try f.db.claim(leaseMs: 5_000, limit: 5)
        #expect(jobs.count == 5)
        // Job 2's holder goes silent past its lease; the job is recovered and claimed again,
        // with a new token, while the others are renewed by their holder.
        f.clock.advance(seconds: 4)
        for (i, job) in jobs.enumerated() where i != 2 {
            try f.db.heartbeat(jobId: job.jobId, token: job.leaseToken, leaseMs: 5_000)
        }
        f.clock.advance(seconds: 2)
        #expect(try f.db.recoverExpiredLeases(maxAttempts: 3).requeued == 1)
        let retaken = try #require(try f.db.claim(leaseMs: 5_000))
        #expect(retaken.jobId == jobs[2].jobId)

        let outcomes = try f.db.complete(jobs.map {
            Completion(jobId: $0.jobId, token: $0.leaseToken, result: Self.result("first holder"))
        })
        #expect(outcomes == [.stored, .stored, .stale, .stored, .stored])
        #expect(try f.db.result(reportId: jobs[2].reportId) == nil, "the stale completion wrote nothing")
        #expect(try f.db.jobStatus(reportId: jobs[2].reportId)?.state == .running, "its new holder still runs it")
        for i in [0, 1, 3, 4] {
            #expect(try f.db.jobStatus(reportId: jobs[i].reportId)?.state == .done)
            #expect(try f.db.result(reportId: jobs[i].reportId) != nil)
        }
        // The group counts the four stored results, in the same transaction as their state.
        #expect(try f.db.groups(GroupFilter(limit: 10)).map(\.count) == [4])
        try GroupLedgerTests.expectLedgerMatchesResults(f)

        // The new holder completes it; the group ledger follows.
        #expect(try f.db.complete([Completion(jobId: retaken.jobId, token: retaken.leaseToken, result: Self.result("second"))]) == [.stored])
        #expect(try f.db.groups(GroupFilter(limit: 10)).map(\.count) == [5])
        try GroupLedgerTests.expectLedgerMatchesResults(f)
    }

    @Test func completionsFromManyThreadsAllCommitOnceWithTheirOwnOutcome() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        for n in 0..<200 { _ = try f.db.submit(f.report(n)) }
        let jobs = try (0..<25).flatMap { _ in try f.db.claim(leaseMs: 60_000, limit: 8) }
        #expect(jobs.count == 200)
        let committer = CompletionCommitter(store: f.db, maxBatch: 16)
        // Every fifth completion carries a wrong token: refused alone, whatever batch it is in.
        let outcomes = Locked<[Int64: CompletionOutcome]>([:])
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for (i, job) in jobs.enumerated() where i % 8 == thread {
                let token = i % 5 == 0 ? job.leaseToken &+ 1 : job.leaseToken
                let group = GroupLedgerTests.group("g\(i % 3)")
                do {
                    let outcome = try committer.complete(
                        Completion(jobId: job.jobId, token: token, result: Self.result("\(i)", group: group)))
                    outcomes.mutate { $0[job.jobId] = outcome }
                } catch {
                    failures.mutate { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.value.isEmpty)
        #expect(outcomes.value.count == 200)
        for (i, job) in jobs.enumerated() {
            #expect(outcomes.value[job.jobId] == (i % 5 == 0 ? .stale : .stored), "job \(job.jobId)")
        }
        #expect(try f.db.stateCounts()[.done] == 160)
        #expect(try f.db.stateCounts()[.running] == 40)
        try GroupLedgerTests.expectLedgerMatchesResults(f)
    }

    @Test func aCompletionTheDatabaseRefusesFailsAloneInItsBatch() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        for n in 0..<40 { _ = try f.db.submit(f.report(n)) }
        let jobs = try (0..<5).flatMap { _ in try f.db.claim(leaseMs: 60_000, limit: 8) }
        let poisoned = jobs[17]
        // A trigger makes SQLite itself refuse one result, whatever batch it lands in.
        try DatabaseQueue(path: f.db.path).write { db in
            try db.execute(sql: """
                CREATE TRIGGER refuse BEFORE INSERT ON results WHEN NEW.report_id = \(poisoned.reportId)
                BEGIN SELECT RAISE(ABORT, 'poisoned'); END
                """)
        }
        let committer = CompletionCommitter(store: f.db, maxBatch: 8)
        let tickets = jobs.map { committer.enqueue(Completion(jobId: $0.jobId, token: $0.leaseToken, result: Self.result("x"))) }
        var refused: [Int64] = []
        for (job, ticket) in zip(jobs, tickets) {
            do { #expect(try ticket.wait() == .stored) } catch { refused.append(job.jobId) }
        }
        #expect(refused == [poisoned.jobId])
        #expect(try f.db.stateCounts()[.done] == 39)
        #expect(try f.db.jobStatus(reportId: poisoned.reportId)?.state == .running, "rolled back: still leased, to retry")
        try GroupLedgerTests.expectLedgerMatchesResults(f)
    }

    @Test func aBatchedAffinityClaimTakesWhatSingleClaimsWouldInTheirOrder() throws {
        let single = try Fixture(), batched = try Fixture()
        defer { single.dir.remove(); batched.dir.remove() }
        // Build ids: "aa…" held by this worker, "bb…" by another, "cc…" by no one.
        let ids = ["aa", "cc", "bb", "aa", "cc", "bb", "aa", "cc"].map { String(repeating: $0, count: 20) }
        for f in [single, batched] {
            for (n, id) in ids.enumerated() {
                var report = f.report(n)
                report.buildIds = [try BuildID(id)]
                _ = try f.db.submit(report)
            }
            f.clock.advance(seconds: 10)
        }
        let preference = AffinityPreference(
            holds: [try BuildID(ids[0])], heldElsewhere: [try BuildID(ids[2])], waitMs: 5_000)
        var order: [(Int64, AffinityMatch)] = []
        while let (job, match) = try single.db.claim(leaseMs: 30_000, affinity: preference) { order.append((job.reportId, match)) }
        #expect(order.map { $0.1 } == [.hit, .hit, .hit, .neutral, .neutral, .neutral, .fallback, .fallback])

        let first = try batched.db.claim(leaseMs: 30_000, affinity: preference, limit: 5)
        let rest = try batched.db.claim(leaseMs: 30_000, affinity: preference, limit: 5)
        let claimed = first + rest
        #expect(first.count == 5)
        #expect(claimed.map { $0.job.reportId } == order.map { $0.0 })
        #expect(claimed.map { $0.match } == order.map { $0.1 })
        #expect(Set(claimed.map { $0.job.leaseToken }).count == 8)
    }
}
