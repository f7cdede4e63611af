import Foundation
import Storage
import ReportModel
import TestSupport
import Testing

/// Runs the real `stackline` and `stackline-worker` binaries against a real SQLite file.
@Suite(.serialized) struct EndToEndTests {
    let markerSleepOnce = "STACKLINE_TEST_HOOK_SLEEP_FIRST_ATTEMPT"
    let markerSegv = "STACKLINE_TEST_HOOK_SEGV"

    func realReport() throws -> Data { try CrashFixture.shared.report(symbolicate: "off") }

    /// Submits six distinct real reports; the first makes its worker sleep on attempt 1.
    func submitWithSleeperFirst(_ h: Harness) throws -> [Int64] {
        let base = try realReport()
        let reports = [variant(of: base, number: 0, marker: markerSleepOnce)]
            + (1...5).map { variant(of: base, number: $0) }
        return try h.submit(try h.write(reports))
    }

    @Test func workerKilledMidJobIsRetriedAndCompletesOnce() throws {
        let h = try Harness()
        let ids = try submitWithSleeperFirst(h)
        #expect(ids.count == 6)

        let master = try h.startMaster(["--workers", "2", "--retry-delay", "0.2", "--lease", "5"])
        try h.waitUntil("the worker to sleep in the test hook") {
            !workerPids(in: master.log, message: "test hook: sleeping").isEmpty
        }
        let victim = try #require(workerPids(in: master.log, message: "test hook: sleeping").first)
        #expect(kill(victim, SIGKILL) == 0)

        let db = try h.database()
        try h.waitUntil("all jobs done") { try db.stateCounts()[.done] == 6 }
        master.signal(SIGTERM)
        #expect(try master.waitForExit() == 0)

        let slept = try #require(try db.jobStatus(reportId: ids[0]))
        #expect(slept.state == .done)
        #expect(slept.attempts == 2)
        #expect(master.log.contains("signal 9"))
        #expect(h.completions.sorted() == ids.sorted(), "each report completes exactly once")
        for id in ids { #expect(try db.result(reportId: id) != nil) }
    }

    @Test func masterKilledMidJobLosesNothing() throws {
        let h = try Harness()
        let ids = try submitWithSleeperFirst(h)

        let first = try h.startMaster(["--workers", "2", "--lease", "2", "--retry-delay", "0.2"])
        try h.waitUntil("the worker to sleep in the test hook") {
            !workerPids(in: first.log, message: "test hook: sleeping").isEmpty
        }
        let sleeper = try #require(workerPids(in: first.log, message: "test hook: sleeping").first)
        first.signal(SIGKILL)
        _ = try first.waitForExit()
        let db = try h.database()
        #expect(try db.jobStatus(reportId: ids[0])?.state == .running, "the killed master's lease is still held")
        // Orphaned workers notice their master is gone and exit.
        try h.waitUntil("the orphaned worker to exit") { !processExists(sleeper) }

        let second = try h.startMaster(["--workers", "2", "--lease", "2", "--retry-delay", "0.2", "--once"])
        #expect(try second.waitForExit() == 0)
        #expect(try db.stateCounts()[.done] == 6)
        let slept = try #require(try db.jobStatus(reportId: ids[0]))
        #expect(slept.state == .done)
        #expect(slept.attempts == 2)
        // Jobs the first master finished are not redone; the rest finish exactly once.
        #expect(h.completions.sorted() == ids.sorted(), "each report completes exactly once")
    }

    @Test func poisonReportIsQuarantinedWhileOthersComplete() throws {
        let h = try Harness()
        let base = try realReport()
        var reports = (0..<50).map { variant(of: base, number: $0) }
        reports.append(variant(of: base, number: 1000, marker: markerSegv))
        reports += (50..<100).map { variant(of: base, number: $0) }
        let ids = try h.submit(try h.write(reports))
        #expect(ids.count == 101)
        let poison = ids[50]

        let master = try h.startMaster([
            "--workers", "2", "--once", "--max-attempts", "3", "--retry-delay", "0.1",
        ])
        #expect(try master.waitForExit() == 0)
        let db = try h.database()
        let status = try #require(try db.jobStatus(reportId: poison))
        #expect(status.state == .failed)
        #expect(status.attempts == 3)
        #expect(status.lastError == "worker crashed (signal 11: SIGSEGV) on 3 attempts")
        #expect(try db.stateCounts()[.done] == 100)
        #expect(h.completions.sorted() == ids.filter { $0 != poison }.sorted())
        #expect(try db.result(reportId: poison) == nil)
    }

    @Test func concurrentSubmittersWhileTheMasterRuns() throws {
        let h = try Harness()
        let base = try realReport()
        // Create the database first, as a deployed master would have.
        let master = try h.startMaster(["--workers", "2", "--retry-delay", "0.2"])
        try h.waitUntil("the master to start") { master.log.contains("master started") }

        var batches: [[String]] = []
        for b in 0..<4 {
            let reports = (0..<25).map { variant(of: base, number: b * 100 + $0) }
            batches.append(try h.write(reports, subdir: "batch\(b)"))
        }
        // Four submit processes at once, each one transaction per report.
        let outputs = Locked<[ProcessOutput]>([])
        let errors = Locked<[String]>([])
        let environment = h.environment
        let inputs = batches
        DispatchQueue.concurrentPerform(iterations: 4) { b in
            do {
                let out = try runProcess(TestPaths.stackline, ["submit"] + inputs[b], environment: environment)
                outputs.mutate { $0.append(out) }
            } catch {
                errors.mutate { $0.append("\(error)") }
            }
        }
        let ids = outputs.value.flatMap { out -> [Int64] in
            if out.status != 0 { errors.mutate { $0.append(out.stderr) } }
            return out.stdout.split(separator: "\n").compactMap { Int64($0.split(separator: "\t").first ?? "") }
        }
        #expect(errors.value.isEmpty, "a submit failed: \(errors.value)")
        #expect(!outputs.value.contains { $0.stderr.localizedCaseInsensitiveContains("busy") || $0.stderr.contains("locked") })
        #expect(ids.count == 100)
        #expect(Set(ids).count == 100)

        let db = try h.database()
        try h.waitUntil("all 100 jobs done") { try db.stateCounts()[.done] == 100 }
        master.signal(SIGTERM)
        #expect(try master.waitForExit() == 0)
        #expect(!master.log.localizedCaseInsensitiveContains("busy"))
        #expect(h.completions.sorted() == ids.sorted(), "every report processed exactly once")
    }

    @Test func realCrashThroughGzipSubmitAndTwoWorkers() throws {
        let h = try Harness()
        let data = try CrashFixture.shared.report(symbolicate: "off", cached: false)
        let path = try h.write([data])[0]
        try runProcess("/usr/bin/gzip", ["-n", path])
        let ids = try h.submit([path + ".gz"])
        #expect(ids.count == 1)
        // The same report again, plain: deduplicated by content, no second job.
        let again = try h.stackline(["submit", "-"], stdin: data)
        #expect(again.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(ids[0])")
        #expect(try h.database().stateCounts()[.queued] == 1)

        let master = try h.startMaster(["--workers", "2", "--once"])
        #expect(try master.waitForExit() == 0)
        let json = try h.stackline(["report", "\(ids[0])", "--json"])
        #expect(json.status == 0)
        let report = try JSONDecoder().decode(SymbolicatedReport.self, from: Data(json.stdout.utf8))
        #expect(report.id == ids[0])
        #expect(report.format == "swift-backtrace-json")
        // Every raw frame of the runtime's report is kept, in order.
        let runtime = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let thread = try #require((runtime["threads"] as? [[String: Any]])?.first { $0["crashed"] as? Bool == true })
        let addresses = (thread["frames"] as? [[String: Any]] ?? []).compactMap { $0["address"] as? String }
        let crashed = try #require(report.threads.first { $0.crashed })
        #expect(crashed.frames.filter { !$0.inlined }.map(\.address) == addresses.compactMap { Address(parsing: $0) })

        let text = try h.stackline(["report", "\(ids[0])"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("crashed:"))
        let status = try h.stackline(["status", "\(ids[0])"])
        #expect(status.stdout.contains("state\tdone"))
    }

    /// A master and a `submit` often create the database together. Every process must come up:
    /// GRDB alone lets two of them run the first migration at once, and one then dies on
    /// "table already exists" (seen as a master that never processed a `submit --wait`).
    @Test func processesCreatingOneNewDatabaseTogetherAllSucceed() throws {
        for round in 0..<8 {
            let h = try Harness()
            let (stackline, environment) = (TestPaths.stackline, h.environment)
            let failures = Locked<[String]>([])
            // `submit` creates the database (read-only commands no longer do).
            DispatchQueue.concurrentPerform(iterations: 4) { i in
                do {
                    let out = try runProcess(
                        stackline, ["submit", "--accept-unparsed", "-"], environment: environment, stdin: Data("input \(i)\n".utf8))
                    if out.status != 0 { failures.mutate { $0.append(out.stderr) } }
                } catch { failures.mutate { $0.append("\(error)") } }
            }
            #expect(failures.value.isEmpty, "round \(round): \(failures.value)")
        }
    }

    @Test func submitWaitPrintsTheSymbolicatedReport() throws {
        let h = try Harness()
        let report = variant(of: try realReport(), number: 1)
        let path = try h.write([report])[0]
        let master = try h.startMaster(["--workers", "1"])
        let out = try h.stackline(["submit", "--wait", "--json", path])
        master.signal(SIGTERM)
        _ = try master.waitForExit()
        #expect(out.status == 0, "\(out.stderr)")
        // One JSON document: an array with one entry per input, each carrying its report.
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]])
        #expect(entries.count == 1)
        let id = try #require(entries.first?["reportId"] as? Int)
        let document = try #require(entries.first?["report"])
        let decoded = try JSONDecoder().decode(SymbolicatedReport.self, from: try JSONSerialization.data(withJSONObject: document))
        #expect(decoded.id == Int64(id))
    }

    @Test func malformedInputIsRefusedWithTheReason() throws {
        let h = try Harness()
        let good = String(decoding: try realReport(), as: UTF8.self)
        let broken = good.replacingOccurrences(of: "\"frames\": [", with: "\"frames\": [}")
        let paths = try h.write([Data(broken.utf8), Data("just some text\n".utf8)])
        let out = try h.stackline(["submit"] + paths)
        #expect(out.status != 0)
        #expect(out.stderr.contains("invalid JSON at line"))
        #expect(out.stderr.contains("format not detected"))
        #expect(try h.database().stateCounts()[.queued] == 0)

        // A gzip bomb (80 MiB of zeros in ~80 KiB) is refused by the streamed, capped inflate.
        let bomb = h.dir.file("bomb.json.gz")
        try runProcess("/bin/sh", ["-c", "head -c 83886080 /dev/zero | gzip -9 > \(bomb)"])
        let refused = try h.stackline(["submit", bomb])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("decompressed size exceeds the limit of 67108864 bytes"), "\(refused.stderr)")

        let accepted = try h.stackline(["submit", "--accept-unparsed", paths[1]])
        #expect(accepted.status == 0)
        let id = try #require(Int64(accepted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let status = try h.stackline(["status", "\(id)"])
        #expect(status.stdout.contains("state\tfailed"))
        #expect(status.stdout.contains("format not detected"))
    }

    @Test func inputErrorInTheWorkerFailsOnTheFirstAttempt() throws {
        let h = try Harness()
        // Stored under a known format but unparseable, as after a parser change: the worker
        // must answer "input error" and the job must not be retried.
        let broken = String(decoding: try realReport(), as: UTF8.self).replacingOccurrences(of: "\"threads\"", with: "\"threads\" ,")
        let db = try h.database()
        let submitted = try db.submit(NewReport(raw: Data(broken.utf8), format: "swift-backtrace-json", kind: .crash))
        let master = try h.startMaster(["--workers", "1", "--once"])
        #expect(try master.waitForExit() == 0)
        let status = try #require(try db.jobStatus(reportId: submitted.reportId))
        #expect(status.state == .failed)
        #expect(status.attempts == 1)
        #expect(status.lastError?.hasPrefix("input error: invalid JSON at line") == true)
    }

    /// The master stores a worker's result without decoding it, so it checks the bytes inflate
    /// to the size the worker states: a cut result is retried, then quarantined, never stored.
    @Test func aResultThatDoesNotInflateIsNeverStored() throws {
        let h = try Harness()
        let ids = try h.submit(try h.write([variant(of: try realReport(), number: 1, marker: "STACKLINE_TEST_HOOK_CORRUPT_RESULT")]))
        let master = try h.startMaster(["--workers", "1", "--once", "--max-attempts", "2", "--retry-delay", "0.1"])
        #expect(try master.waitForExit() == 0)
        let status = try #require(try h.database().jobStatus(reportId: ids[0]))
        #expect(status.state == .failed)
        #expect(status.lastError == "worker reply's report does not inflate to its stated size on 2 attempts")
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM results") == 0)
        #expect(master.log.contains("test hook: corrupting the result"))
    }

    @Test func hungJobTimesOutAndIsQuarantined() throws {
        let h = try Harness()
        let ids = try h.submit(try h.write([variant(of: try realReport(), number: 1, marker: "STACKLINE_TEST_HOOK_HANG")]))
        let master = try h.startMaster([
            "--workers", "1", "--once", "--job-timeout", "1", "--max-attempts", "2", "--retry-delay", "0.1",
        ])
        #expect(try master.waitForExit() == 0)
        let status = try #require(try h.database().jobStatus(reportId: ids[0]))
        #expect(status.state == .failed)
        #expect(status.lastError == "timed out after 1s (worker killed) on 2 attempts")
    }
}


@Suite(.serialized) struct DrainTests {
    @Test func sigtermReleasesTheLeaseOfAJobThatOutlivesTheDrain() throws {
        let h = try Harness()
        let ids = try h.submit(try h.write([
            variant(of: try CrashFixture.shared.report(symbolicate: "off"), number: 1, marker: "STACKLINE_TEST_HOOK_HANG")
        ]))
        let master = try h.startMaster(["--workers", "1", "--drain", "1", "--job-timeout", "600"])
        try h.waitUntil("the worker to hang") { !workerPids(in: master.log, message: "test hook: sleeping").isEmpty }
        master.signal(SIGTERM)
        #expect(try master.waitForExit() == 0)
        let status = try #require(try h.database().jobStatus(reportId: ids[0]))
        #expect(status.state == .queued)
        #expect(status.attempts == 0, "an interrupted attempt is not counted")
        #expect(master.log.contains("lease released"))
    }
}
