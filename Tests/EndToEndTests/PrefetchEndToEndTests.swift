import Foundation
import Storage
import TestSupport
import Testing

/// A local slot leases several jobs per claim (`--prefetch`): the real `stackline master` and
/// `stackline-worker` processes, a real SQLite file, and kills. Jobs that wait behind a running
/// one must be done exactly once whatever dies, and never time out while they wait.
@Suite(.serialized) struct PrefetchEndToEndTests {
    let markerSleepOnce = "STACKLINE_TEST_HOOK_SLEEP_FIRST_ATTEMPT"

    /// The sleeper first (claimed first: same priority, lowest id), then `others` reports.
    func submitSleeperFirst(_ h: Harness, others: Int, marker: String? = nil) throws -> [Int64] {
        let base = try CrashFixture.shared.report(symbolicate: "off")
        let reports = [variant(of: base, number: 0, marker: marker ?? markerSleepOnce)]
            + (1...others).map { variant(of: base, number: $0) }
        return try h.submit(try h.write(reports))
    }

    /// One slot holding four jobs, and the jobs kept behind the sleeper (no hand-back): they are
    /// held by the slot when its worker is killed, the first of them already sent ahead to the
    /// worker (in its stdin pipe, never started).
    let oneSlotHoldingFour = ["--workers", "1", "--prefetch", "4", "--hand-back-after", "600"]

    @Test func aKilledWorkersPrefetchedJobsAreDoneExactlyOnce() throws {
        let h = try Harness()
        let ids = try submitSleeperFirst(h, others: 7)
        let master = try h.startMaster(oneSlotHoldingFour + ["--lease", "2", "--retry-delay", "0.2"])
        try h.waitUntil("the worker to sleep in the test hook") {
            !workerPids(in: master.log, message: "test hook: sleeping").isEmpty
        }
        let db = try h.database()
        #expect(try db.stateCounts()[.running] == 4, "the sleeper and the three leased with it")
        // Longer than the lease: the waiting jobs live on the slot's heartbeats, not on the
        // lease they were claimed with (the master recovers expired leases every second).
        Thread.sleep(forTimeInterval: 3)
        #expect(try db.stateCounts()[.running] == 4)
        #expect(!master.log.contains("recovered expired leases"))

        let victim = try #require(workerPids(in: master.log, message: "test hook: sleeping").first)
        #expect(kill(victim, SIGKILL) == 0)
        try h.waitUntil("all jobs done") { try db.stateCounts()[.done] == 8 }
        master.signal(SIGTERM)
        #expect(try master.waitForExit() == 0)

        #expect(try db.jobStatus(reportId: ids[0])?.attempts == 2, "the killed job is retried once")
        for id in ids.dropFirst() {
            // Waiting behind the killed job cost them nothing: no expiry, no retry.
            #expect(try db.jobStatus(reportId: id)?.attempts == 1, "report \(id)")
            #expect(try db.result(reportId: id) != nil)
        }
        #expect(h.completions.sorted() == ids.sorted(), "each report completes exactly once")
    }

    @Test func aKilledMastersPrefetchedJobsAreDoneExactlyOnceByTheNext() throws {
        let h = try Harness()
        let ids = try submitSleeperFirst(h, others: 5)
        let first = try h.startMaster(oneSlotHoldingFour + ["--lease", "2", "--retry-delay", "0.2"])
        try h.waitUntil("the worker to sleep in the test hook") {
            !workerPids(in: first.log, message: "test hook: sleeping").isEmpty
        }
        let sleeper = try #require(workerPids(in: first.log, message: "test hook: sleeping").first)
        let db = try h.database()
        #expect(try db.stateCounts()[.running] == 4)
        first.signal(SIGKILL)
        _ = try first.waitForExit()
        try h.waitUntil("the orphaned worker to exit") { !processExists(sleeper) }

        // The dead master's four leases expire and are recovered; nothing is lost or doubled.
        let second = try h.startMaster(["--workers", "2", "--lease", "2", "--retry-delay", "0.2", "--once"])
        #expect(try second.waitForExit() == 0)
        #expect(try db.stateCounts()[.done] == 6)
        #expect(h.completions.sorted() == ids.sorted(), "each report completes exactly once")
    }

    @Test func aDrainHandsBackTheJobsThatNeverStartedUncounted() throws {
        let h = try Harness()
        let ids = try submitSleeperFirst(h, others: 5, marker: "STACKLINE_TEST_HOOK_HANG")
        let master = try h.startMaster(oneSlotHoldingFour + ["--drain", "1", "--job-timeout", "600"])
        try h.waitUntil("the worker to hang") { !workerPids(in: master.log, message: "test hook: sleeping").isEmpty }
        let db = try h.database()
        #expect(try db.stateCounts()[.running] == 4)
        master.signal(SIGTERM)
        #expect(try master.waitForExit() == 0)
        #expect(try db.stateCounts()[.queued] == 6, "nothing stays leased to a stopped master")
        for id in ids {
            #expect(try db.jobStatus(reportId: id)?.attempts == 0, "report \(id): an unfinished attempt is not counted")
        }
    }
}
