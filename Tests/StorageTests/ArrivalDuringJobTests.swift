import Foundation
import Storage
import ReportModel
import TestSupport
import Testing

/// A debug file stored while a report's job runs: the worker may have looked for it before it
/// was stored, and an add only requeues reports with no job queued or running. Each case
/// follows one report through claims, adds and completions, and reads back which jobs were
/// queued; what the result lacked is the test's own choice.
@Suite struct ArrivalDuringJobTests {
    static func result(missing: [String]) throws -> JobResult {
        JobResult(
            symbolicatedJSON: Data("{}".utf8), status: missing.isEmpty ? .complete : .partial,
            missingImages: try missing.map { MissingDebugFile(buildID: try BuildID($0), imageName: "lib\($0).so") })
    }

    static func complete(_ f: StoreFixture, _ job: ClaimedJob, missing: [String]) throws {
        try f.store.complete(jobId: job.jobId, token: job.leaseToken, result: try result(missing: missing))
    }

    @Test(arguments: Backend.allCases) func aFileStoredWhileTheFirstJobRunsQueuesTheReportAgainWhenThatJobLacksIt(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let report = try f.store.submit(f.report(1)).reportId
        let first = try #require(try f.store.claim(leaseMs: 30_000))
        // The report has no result yet, so nothing lists it as lacking the file.
        #expect(try f.store.requeueReports(missing: [try BuildID("cafe01")]).isEmpty)
        try Self.complete(f, first, missing: ["cafe01", "beef02"])
        let again = try #require(try f.store.claim(leaseMs: 30_000), "the completion queued the report again")
        #expect(again.reportId == report && again.jobId != first.jobId)
        try Self.complete(f, again, missing: ["beef02"])
        #expect(try f.store.claim(leaseMs: 30_000) == nil, "nothing arrived during the second job")
    }

    @Test(arguments: Backend.allCases) func aFileStoredWhileARerunRunsIsNotLost(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let report = try f.store.submit(f.report(1)).reportId
        try Self.complete(f, try #require(try f.store.claim(leaseMs: 30_000)), missing: ["aa01", "bb02"])
        // The first add requeues it; a second add lands while that job runs.
        #expect(try f.store.requeueReports(missing: [try BuildID("aa01")]) == [report])
        let rerun = try #require(try f.store.claim(leaseMs: 30_000))
        #expect(try f.store.requeueReports(missing: [try BuildID("bb02")]).isEmpty, "a job is running: not queued twice")
        try Self.complete(f, rerun, missing: ["bb02"])
        let third = try #require(try f.store.claim(leaseMs: 30_000), "bb02 arrived during the rerun that lacked it")
        #expect(third.reportId == report)
        try Self.complete(f, third, missing: [])
        #expect(try f.store.claim(leaseMs: 30_000) == nil)
        #expect(try f.store.requeueReports(missing: [try BuildID("bb02")]).isEmpty, "the report lacks nothing now")
    }

    @Test(arguments: Backend.allCases) func aFileTheResultDoesNotLackOrOneStoredBeforeTheClaimQueuesNothing(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        _ = try f.store.submit(f.report(1)).reportId
        _ = try f.store.submit(f.report(2)).reportId
        // Stored while the jobs were queued: the worker finds it when it runs.
        #expect(try f.store.requeueReports(missing: [try BuildID("cc03")]).isEmpty)
        let one = try #require(try f.store.claim(leaseMs: 30_000))
        let two = try #require(try f.store.claim(leaseMs: 30_000))
        // While both run, a file arrives that neither result lacks.
        #expect(try f.store.requeueReports(missing: [try BuildID("dd04")]).isEmpty)
        // Still lacking cc03 (say, another architecture): no loop of reruns.
        try Self.complete(f, one, missing: ["cc03"])
        try Self.complete(f, two, missing: [])
        #expect(try f.store.claim(leaseMs: 30_000) == nil)
    }

    @Test(arguments: Backend.allCases) func aReportAlreadyQueuedByHandIsNotQueuedTwice(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let report = try f.store.submit(f.report(1)).reportId
        let job = try #require(try f.store.claim(leaseMs: 30_000))
        _ = try f.store.requeueReports(missing: [try BuildID("ee05")])
        _ = try f.store.enqueueReprocessing(reportId: report)
        try Self.complete(f, job, missing: ["ee05"])
        #expect(try f.store.claim(leaseMs: 30_000)?.reportId == report)
        #expect(try f.store.claim(leaseMs: 30_000) == nil, "one queued job, not two")
    }
}
