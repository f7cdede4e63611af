import Foundation
import ReportModel
import Storage
import TestSupport
import Testing

/// The alert cursor and results whose transactions commit out of position order
/// (`ResultPositions`).
@Suite struct AlertHorizonTests {
    static func result(_ group: String) -> JobResult {
        JobResult(
            symbolicatedJSON: Data("{}".utf8), status: .complete,
            group: GroupKey(fingerprint: group, kind: .crash, title: "crash in \(group)", rulesVersion: 1, frames: [group]),
            missingImages: [])
    }

    /// One evaluation step as `AlertService.evaluate` takes it: the horizon first, then the
    /// candidates through it, then the cursor moved to the last one. Returns the candidates.
    static func pass(_ store: any ServiceStore) throws -> [AlertCandidate] {
        guard let cursor = try store.alertCursor() else { throw TestSupportError("no alert cursor yet") }
        let horizon = try store.alertHorizon()
        let candidates = try store.alertSnapshot { try $0.candidates(after: cursor, through: horizon, limit: 100) }
        try store.recordAlertEvents([], cursorFrom: cursor, to: candidates.last?.position ?? cursor)
        return candidates
    }

    /// Polls the cluster's own view of its sessions until `condition` holds. Not a timing
    /// assertion: the bound only keeps a broken test from hanging the run.
    static func waitUntil(_ what: String, _ condition: () throws -> Bool) throws {
        let giveUp = Date().addingTimeInterval(300)
        while try !condition() {
            guard Date() < giveUp else { throw TestSupportError("gave up waiting until \(what)") }
            usleep(20_000)
        }
    }

    /// A completion that got its result's position first but commits after a later one: the
    /// cursor must not pass the later one while the earlier is uncommitted, or it never sees it.
    /// PostgreSQL only: SQLite has one writer, so a held completion holds back every other
    /// write and no later result can commit before it.
    @Test func cursorNeverSkipsAResultCommittedLate() throws {
        let f = try AlertStoreFixture(.postgres, clock: { 1_800_000_000_000 })
        let store = f.store
        // The node whose completion commits late.
        let lateNode = try f.another()

        // Group "held" exists before alerts are enabled, so its row can be locked below.
        let history = try store.submit(NewReport(raw: Data("history".utf8), format: "test", kind: .crash, app: "App", version: "1"))
        let first = try #require(try store.claim(leaseMs: 60_000))
        try store.complete(jobId: first.jobId, token: first.leaseToken, result: Self.result("held"))
        try store.recordAlertEvents([], cursorFrom: nil, to: try store.alertHorizon())
        #expect(try store.alertCursor() == Int64(try f.sqlInt("SELECT position FROM results WHERE report_id = \(history.reportId)")))

        let lateReport = try store.submit(NewReport(raw: Data("late".utf8), format: "test", kind: .crash, app: "App", version: "1"))
        let earlyReport = try store.submit(NewReport(raw: Data("early".utf8), format: "test", kind: .crash, app: "App", version: "1"))
        let lateJob = try #require(try store.claim(leaseMs: 60_000))
        let earlyJob = try #require(try store.claim(leaseMs: 60_000))
        #expect(lateJob.reportId == lateReport.reportId)
        #expect(earlyJob.reportId == earlyReport.reportId)

        let failures = Locked<[String]>([])
        // A transaction that holds group "held"'s row: the late completion stores its result
        // (taking its position) and then waits for the row to update the group's count.
        let locked = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holderDone = DispatchSemaphore(value: 0)
        defer { release.signal() }
        Thread.detachNewThread {
            do {
                try store.write { db in
                    _ = try db.rows("SELECT 1 FROM groups WHERE fingerprint = 'held' FOR NO KEY UPDATE", [])
                    locked.signal()
                    release.wait()
                }
            } catch {
                failures.mutate { $0.append("holder: \(error)") }
                locked.signal()
            }
            holderDone.signal()
        }
        locked.wait()

        let lateDone = Locked(false)
        let lateFinished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do {
                try lateNode.complete(jobId: lateJob.jobId, token: lateJob.leaseToken, result: Self.result("held"))
            } catch {
                failures.mutate { $0.append("late completion: \(error)") }
            }
            lateDone.mutate { $0 = true }
            lateFinished.signal()
        }
        try Self.waitUntil("the late completion waits for the group's row") {
            try !lateDone.value
                && f.sqlInt(
                    """
                    SELECT COUNT(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE groups%'
                    """) == 1
        }

        // A later completion commits while the late one is still open.
        try store.complete(jobId: earlyJob.jobId, token: earlyJob.leaseToken, result: Self.result("early"))

        // An evaluation now must not pass the early result without the late one.
        let seen = Locked<[Int64]>([])
        let evaluated = Locked(false)
        let evaluationFinished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do {
                let candidates = try Self.pass(store)
                seen.mutate { $0 += candidates.map(\.reportId) }
            } catch {
                failures.mutate { $0.append("evaluation: \(error)") }
            }
            evaluated.mutate { $0 = true }
            evaluationFinished.signal()
        }
        // Either it is done (what a missing horizon lock allows) or it waits for the lock.
        try Self.waitUntil("the evaluation is done or waits for the horizon") {
            try evaluated.value
                || f.sqlInt(
                    """
                    SELECT COUNT(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'
                    """) == 1
        }
        release.signal()
        holderDone.wait()
        lateFinished.wait()
        evaluationFinished.wait()
        #expect(failures.value == [])

        // The late result took its position first: the scenario is the one meant.
        let late = try f.sqlInt("SELECT position FROM results WHERE report_id = \(lateReport.reportId)")
        let early = try f.sqlInt("SELECT position FROM results WHERE report_id = \(earlyReport.reportId)")
        #expect(late < early)

        // A later evaluation picks up whatever the first one had to leave; between them, each result once.
        let rest = try Self.pass(store)
        #expect(seen.value + rest.map(\.reportId) == [lateReport.reportId, earlyReport.reportId])
        #expect(try store.alertCursor() == Int64(early))
    }
}
