import Foundation
import GRDB
import Hashing
import Storage
import ReportModel
import TestSupport
import Testing

/// A clock the test moves by hand, so leases and backoffs are checked without sleeping.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var ms: Int64 = 1_000_000
    var now: Int64 { lock.withLock { ms } }
    func advance(seconds: Double) { advance(milliseconds: Int64((seconds * 1000).rounded())) }
    func advance(milliseconds: Int64) { lock.withLock { ms += milliseconds } }
}

struct Fixture {
    let dir: TempDirectory
    let clock = ManualClock()
    let db: ServiceDatabase

    init() throws {
        dir = try TempDirectory("jobqueue")
        let clock = clock
        db = try ServiceDatabase(path: dir.file("queue.sqlite"), clock: { clock.now })
    }

    func report(_ n: Int, kind: ReportKind = .crash) -> NewReport {
        NewReport(raw: Data("report \(n)".utf8), format: "test", kind: kind, app: "App", version: "1.0")
    }
}

let policy = RetryPolicy(maxAttempts: 3, baseDelayMs: 1000, maxDelayMs: 60_000, jitter: 0.5)

@Suite struct ServiceDatabaseTests {
    @Test func databaseIsWALWithMigrationsApplied() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        _ = try f.db.submit(f.report(1))
        // Read the file with a separate connection, as another process would.
        let queue = try DatabaseQueue(path: f.dir.file("queue.sqlite"))
        let mode = try queue.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") }
        #expect(mode == "wal")
        let tables = try queue.read {
            try String.fetchAll($0, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        }
        #expect(Set(tables).isSuperset(of: ["reports", "jobs", "results", "grdb_migrations"]))
        // Reopening runs no migration twice.
        _ = try ServiceDatabase(path: f.dir.file("queue.sqlite"))
    }

    @Test(arguments: Backend.allCases) func identicalReportIsStoredOnceWithOneJob(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let first = try f.store.submit(f.report(1))
        let again = try f.store.submit(f.report(1))
        #expect(!first.duplicate)
        #expect(again.duplicate)
        #expect(again.reportId == first.reportId)
        #expect(again.jobId == nil)
        #expect(try f.store.stateCounts()[.queued] == 1)
        let stored = try #require(try f.store.report(id: first.reportId))
        #expect(stored.raw == Data("report 1".utf8))
        #expect(stored.digest == SHA256.hex(Data("report 1".utf8)))
    }

    @Test(arguments: Backend.allCases) func crashesAreClaimedBeforeLagAndReprocessingLast(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let lag = try f.store.submit(f.report(1, kind: .lag))
        let crash = try f.store.submit(f.report(2, kind: .crash))
        let done = try f.store.submit(f.report(3, kind: .crash))
        // Finish report 3, then queue it for reprocessing: it must come after fresh work.
        let first = try #require(try f.store.claim(leaseMs: 10_000))
        #expect(first.reportId == crash.reportId)
        let second = try #require(try f.store.claim(leaseMs: 10_000))
        #expect(second.reportId == done.reportId)
        try f.store.complete(jobId: second.jobId, token: second.leaseToken, result: JobResult(
            symbolicatedJSON: Data("{}".utf8), status: .complete))
        _ = try f.store.enqueueReprocessing(reportId: done.reportId)
        let third = try #require(try f.store.claim(leaseMs: 10_000))
        #expect(third.reportId == lag.reportId)
        let fourth = try #require(try f.store.claim(leaseMs: 10_000))
        #expect(fourth.reportId == done.reportId)
        #expect(try f.store.claim(leaseMs: 10_000) == nil)
    }

    @Test(arguments: Backend.allCases) func concurrentClaimersNeverShareAJob(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        for n in 0..<200 { _ = try f.store.submit(f.report(n)) }
        // Four independent connections (as four processes or nodes would have) race for the jobs.
        let dbs = try (0..<4).map { _ in try f.another() }
        let claimed = Locked<[Int64]>([])
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            do {
                while let job = try dbs[i].claim(leaseMs: 60_000) { claimed.mutate { $0.append(job.jobId) } }
            } catch {
                failures.mutate { $0.append("\(error)") }
            }
        }
        #expect(failures.value.isEmpty)
        #expect(claimed.value.count == 200)
        #expect(Set(claimed.value).count == 200)
    }

    @Test(arguments: Backend.allCases) func staleTokenCannotCompleteAndResultIsWrittenOnce(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let submitted = try f.store.submit(f.report(1))
        let first = try #require(try f.store.claim(leaseMs: 5_000))
        // The first holder goes silent; its lease expires and the job is recovered and re-claimed.
        f.clock.advance(seconds: 6)
        let recovered = try f.store.recoverExpiredLeases(maxAttempts: 3)
        #expect(recovered.requeued == 1)
        let second = try #require(try f.store.claim(leaseMs: 5_000))
        #expect(second.jobId == first.jobId)
        #expect(second.leaseToken != first.leaseToken)
        #expect(second.attempts == 2)

        let stale = JobResult(symbolicatedJSON: Data("{\"who\":\"first\"}".utf8), status: .complete)
        #expect(throws: StorageError.staleLease(jobId: first.jobId)) {
            try f.store.complete(jobId: first.jobId, token: first.leaseToken, result: stale)
        }
        #expect(try f.store.result(reportId: submitted.reportId) == nil)
        #expect(throws: StorageError.staleLease(jobId: first.jobId)) {
            try f.store.heartbeat(jobId: first.jobId, token: first.leaseToken, leaseMs: 5_000)
        }

        let good = JobResult(
            symbolicatedJSON: Data("{\"who\":\"second\"}".utf8), status: .partial,
            missingImages: [MissingDebugFile(buildID: try BuildID("abcd"), imageName: nil)])
        try f.store.complete(jobId: second.jobId, token: second.leaseToken, result: good)
        let result = try #require(try f.store.result(reportId: submitted.reportId))
        #expect(String(decoding: result.symbolicatedJSON, as: UTF8.self) == "{\"who\":\"second\"}")
        #expect(result.missingBuildIds.map(\.hex) == ["abcd"])
        #expect(result.status == .partial)
        #expect(try f.store.jobStatus(reportId: submitted.reportId)?.state == .done)
        // A second completion with the (now cleared) token is refused as well.
        #expect(throws: StorageError.staleLease(jobId: second.jobId)) {
            try f.store.complete(jobId: second.jobId, token: second.leaseToken, result: good)
        }
    }

    @Test(arguments: Backend.allCases) func heartbeatKeepsALeaseAlive(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        _ = try f.store.submit(f.report(1))
        let job = try #require(try f.store.claim(leaseMs: 10_000))
        f.clock.advance(seconds: 8)
        try f.store.heartbeat(jobId: job.jobId, token: job.leaseToken, leaseMs: 10_000)
        f.clock.advance(seconds: 8)  // 16 s after the claim: past the first lease, inside the renewed one.
        #expect(try f.store.recoverExpiredLeases().requeued == 0)
        f.clock.advance(seconds: 3)
        #expect(try f.store.recoverExpiredLeases().requeued == 1)
    }

    @Test(arguments: Backend.allCases) func retryableFailuresBackOffExponentiallyThenQuarantine(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let submitted = try f.store.submit(f.report(1))
        for attempt in 1...3 {
            let job = try #require(try f.store.claim(leaseMs: 10_000))
            #expect(job.attempts == attempt)
            let before = f.store.now()
            let outcome = try f.store.fail(
                jobId: job.jobId, token: job.leaseToken, failure: .retryable("worker crashed (signal 11)"),
                policy: policy)
            if attempt < 3 {
                guard case .retryScheduled(let runAfter, _) = outcome else {
                    Issue.record("expected a retry, got \(outcome)")
                    return
                }
                let base = Int64(1000) << Int64(attempt - 1)  // 1 s, then 2 s
                #expect(runAfter >= before + base)
                #expect(runAfter <= before + base + base / 2)
                // Not runnable before its backoff ends.
                #expect(try f.store.claim(leaseMs: 10_000) == nil)
                // Exact milliseconds: a round trip through Double seconds can land 1 ms short.
                f.clock.advance(milliseconds: runAfter - before)
            } else {
                #expect(outcome == .failed(reason: "worker crashed (signal 11) on 3 attempts"))
            }
        }
        let status = try #require(try f.store.jobStatus(reportId: submitted.reportId))
        #expect(status.state == .failed)
        #expect(status.attempts == 3)
        #expect(status.lastError == "worker crashed (signal 11) on 3 attempts")
        #expect(try f.store.unfinishedCount() == 0)
    }

    @Test(arguments: Backend.allCases) func inputErrorsFailAtOnce(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let submitted = try f.store.submit(f.report(1))
        let job = try #require(try f.store.claim(leaseMs: 10_000))
        let outcome = try f.store.fail(
            jobId: job.jobId, token: job.leaseToken, failure: .permanent("input error: invalid JSON at line 2, column 5"),
            policy: policy)
        #expect(outcome == .failed(reason: "input error: invalid JSON at line 2, column 5"))
        let status = try #require(try f.store.jobStatus(reportId: submitted.reportId))
        #expect(status.state == .failed)
        #expect(status.attempts == 1)
    }

    @Test(arguments: Backend.allCases) func recoveryQuarantinesJobsThatUsedEveryAttempt(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let submitted = try f.store.submit(f.report(1))
        for _ in 1...3 {
            _ = try #require(try f.store.claim(leaseMs: 1_000))
            f.clock.advance(seconds: 2)
            try f.store.recoverExpiredLeases(maxAttempts: 3)
        }
        let status = try #require(try f.store.jobStatus(reportId: submitted.reportId))
        #expect(status.state == .failed)
        #expect(status.lastError?.contains("on 3 attempts") == true)
    }

    @Test(arguments: Backend.allCases) func releasedLeaseDoesNotCountAsAnAttempt(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let submitted = try f.store.submit(f.report(1))
        let job = try #require(try f.store.claim(leaseMs: 10_000))
        try f.store.release(jobId: job.jobId, token: job.leaseToken)
        let status = try #require(try f.store.jobStatus(reportId: submitted.reportId))
        #expect(status.state == .queued)
        #expect(status.attempts == 0)
        #expect(try f.store.claim(leaseMs: 10_000)?.attempts == 1)
    }

    @Test(arguments: Backend.allCases) func rejectedReportIsStoredWithAFailedJob(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let submitted = try f.store.submit(NewReport(
            raw: Data("garbage".utf8), format: "unparsed", kind: .crash, rejectedBecause: "input error: format not detected"))
        #expect(try f.store.claim(leaseMs: 1_000) == nil)
        let status = try #require(try f.store.jobStatus(reportId: submitted.reportId))
        #expect(status.state == .failed)
        #expect(status.lastError == "input error: format not detected")
    }

    @Test func databaseLocationPrecedence() {
        #expect(DatabaseLocation.resolve(option: "/x.sqlite", variable: "/y") == "/x.sqlite")
        #expect(DatabaseLocation.resolve(option: nil, variable: "/y") == "/y")
        #expect(DatabaseLocation.resolve(option: nil, variable: nil) == "data/stackline.sqlite")
    }
}

@Suite struct SHA256Tests {
    @Test func knownVectors() {
        // FIPS 180-4 examples.
        #expect(SHA256.hex(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hex(Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func matchesSha256sumOnRandomData() throws {
        let dir = try TempDirectory("sha")
        defer { dir.remove() }
        for size in [1, 55, 56, 63, 64, 65, 1000, 100_003] {
            let data = Data((0..<size).map { _ in UInt8.random(in: 0...255) })
            let path = dir.file("blob-\(size)")
            try data.write(to: URL(fileURLWithPath: path))
            let out = try runProcess("/usr/bin/sha256sum", [path])
            #expect(SHA256.hex(data) == String(out.stdout.prefix(64)), "size \(size)")
        }
    }
}

/// Kinds, states and statuses come out of the queue as the enums they were stored from, checked
/// against the text plain SQL reads; a value no case has is a typed error, not a crash.
@Suite struct StoredEnumTests {
    @Test func storedTextComesBackAsItsEnum() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let crash = try GroupLedgerTests.process(f, 1, version: "1.0", group: GroupLedgerTests.group("aaaa"), missing: ["ab01"])
        let lag = try f.db.submit(f.report(2, kind: .lag)).reportId
        let queue = try DatabaseQueue(path: f.db.path)
        let text = try queue.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT (SELECT kind FROM reports WHERE id = ?1) || ' ' || (SELECT status FROM results WHERE report_id = ?1)
                        || ' ' || (SELECT kind FROM groups) || ' ' || (SELECT kind FROM reports WHERE id = ?2)
                    """,
                arguments: [crash, lag])
        }
        #expect(text == ["crash partial crash lag"])
        #expect(try f.db.report(id: crash)?.kind == .crash)
        #expect(try f.db.report(id: lag)?.kind == .lag)
        #expect(try f.db.jobStatus(reportId: lag)?.kind == .lag)
        #expect(try f.db.jobStatus(reportId: lag)?.state == .queued)
        #expect(try f.db.result(reportId: crash)?.status == .partial)
        #expect(try f.db.groups(GroupFilter()).map(\.kind) == [.crash])

        try queue.write { try $0.execute(sql: "UPDATE results SET status = 'bogus' WHERE report_id = ?", arguments: [crash]) }
        #expect(throws: StorageError.unknownStoredValue(column: "status", value: "\"bogus\"")) {
            try f.db.result(reportId: crash)
        }
        // The rest of the database is still readable.
        #expect(try f.db.report(id: crash)?.kind == .crash)
    }
}
