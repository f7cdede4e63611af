import Foundation
import TestSupport
import Testing

/// Reports are parsed in `stackline-worker --parse` children, never in `serve`: a parser that
/// traps, is killed or never ends costs the request that caused it. The worker's test hooks
/// (`STACKLINE_TEST_HOOK_PARSE_…` markers in the input, honoured with STACKLINE_TEST_HOOKS=1)
/// stand in for a parser defect, since every known trapping input is fixed; they act in the
/// parse child before its parse.
extension AttackTests {
    /// A real KSCrash report from a public project (Tests/Fixtures/wild/kscrash), made distinct.
    static func wildReport(_ n: Int, marker: String? = nil) throws -> Data {
        let path = TestPaths.packageRoot + "/Tests/Fixtures/wild/kscrash/CrashInHandler.json"
        return variant(of: try Data(contentsOf: URL(fileURLWithPath: path)), number: n, marker: marker)
    }

    @Test(arguments: ["STACKLINE_TEST_HOOK_PARSE_SEGV", "STACKLINE_TEST_HOOK_PARSE_SIGKILL"])
    func aParserThatDiesCostsOnlyItsRequest(marker: String) throws {
        let h = try Harness()
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let server = try h.startServer(["--workers", "0"])

        let good = try server.curl("POST", "/api/v1/reports", token: ingest, body: try Self.wildReport(1))
        #expect(good.status == 202, "\(good)")
        // The parse ran in a child of serve: a `stackline-worker … --parse` is there now.
        #expect(childPids(of: server.pid).contains(where: isParseChild), "children: \(childPids(of: server.pid))")

        let fatal = try Self.wildReport(2, marker: marker)
        let refused = try server.curl("POST", "/api/v1/reports", token: ingest, body: fatal)
        #expect(refused.status == 400, "\(refused)")
        #expect(refused.text.contains("the parser stopped on this report"), "\(refused)")
        #expect(Self.healthy(server), "serve died with the parser: \(server.log.suffix(2000))")
        // The on-the-spot endpoint parses the same way.
        let symbolicate = try server.curl("POST", "/api/v1/symbolicate", token: read, body: fatal)
        #expect(symbolicate.status == 400, "\(symbolicate)")
        #expect(Self.healthy(server))

        // The next report is parsed by a fresh child and stored; the refused one never was.
        let after = try server.curl("POST", "/api/v1/reports", token: ingest, body: try Self.wildReport(3))
        #expect(after.status == 202, "\(after)")
        let count = try runProcess("sqlite3", [h.dbPath, "SELECT count(*) FROM reports"])
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "2", "\(count.summary)")
        #expect(server.log.contains("parse child died on a report"), "\(server.log.suffix(2000))")
    }

    @Test func aParseThatNeverEndsIsStoppedAtTheTimeout() throws {
        let h = try Harness()
        let ingest = try h.token("ingest")
        let server = try h.startServer(["--workers", "0", "--parse-timeout", "2", "--parsers", "1"])

        let hang = try server.curl("POST", "/api/v1/reports", token: ingest, body: try Self.wildReport(1, marker: "STACKLINE_TEST_HOOK_PARSE_HANG"))
        #expect(hang.status == 400, "\(hang)")
        #expect(hang.text.contains("took longer than 2.0 s"), "\(hang)")
        #expect(Self.healthy(server))
        // With one parser, the next report is only parsed if the hung child was replaced.
        let after = try server.curl("POST", "/api/v1/reports", token: ingest, body: try Self.wildReport(2))
        #expect(after.status == 202, "\(after)")
        // The hung child was killed, not left behind: one parse child remains.
        let parsers = childPids(of: server.pid).filter(isParseChild)
        #expect(parsers.count == 1, "\(parsers)")
    }
}

extension AttackTests {
    /// Posts every body at once from a python3 client (one thread each) and returns the statuses
    /// in order: concurrent uploads are what makes a parse child take several inputs in one batch.
    /// `headStart`: seconds body 0 is posted before the others, which then go in order, 50 ms apart.
    static func postConcurrently(_ bodies: [Data], to url: String, token: String, in dir: TempDirectory, headStart: Double = 0) throws -> [Int] {
        for (n, body) in bodies.enumerated() { try body.write(to: URL(fileURLWithPath: dir.file("body-\(n)"))) }
        let script = """
            import sys, threading, time, urllib.request, urllib.error
            url, token, folder, count, head = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
            statuses = [0] * count
            def post(n):
                if n > 0 and head > 0: time.sleep(head + 0.05 * n)  # in order, 50 ms apart
                data = open(f"{folder}/body-{n}", "rb").read()
                request = urllib.request.Request(url, data=data, method="POST", headers={"Authorization": "Bearer " + token})
                try:
                    statuses[n] = urllib.request.urlopen(request, timeout=60).status
                except urllib.error.HTTPError as error:
                    statuses[n] = error.code
            threads = [threading.Thread(target=post, args=(n,)) for n in range(count)]
            for t in threads: t.start()
            for t in threads: t.join()
            print(" ".join(map(str, statuses)))
            """
        let out = try runProcess("python3", ["-c", script, url, token, dir.path, "\(bodies.count)", "\(headStart)"], timeout: 180)
        return out.stdout.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// With one parse child and many uploads at once, inputs share batches: the one that kills
    /// the child (or overruns the deadline) is refused, and every other input of its batch is
    /// parsed by the next child and stored, never refused for its neighbour.
    @Test(arguments: ["STACKLINE_TEST_HOOK_PARSE_SEGV", "STACKLINE_TEST_HOOK_PARSE_HANG"])
    func aFatalInputRefusesOnlyItselfInItsBatch(marker: String) throws {
        let h = try Harness()
        let ingest = try h.token("ingest")
        let server = try h.startServer(
            ["--workers", "0", "--parsers", "1", "--parse-timeout", "2", "--ingest-rate", "0", "--log-level", "debug"])
        let dir = try TempDirectory("batch")
        defer { dir.remove() }
        var bodies = try (0..<24).map { try Self.wildReport(100 + $0) }
        let fatal = 7
        bodies[fatal] = try Self.wildReport(99, marker: marker)
        let statuses = try Self.postConcurrently(bodies, to: server.baseURL + "/api/v1/reports", token: ingest, in: dir)
        #expect(statuses.count == bodies.count, "\(statuses)")
        for (n, status) in statuses.enumerated() { #expect(status == (n == fatal ? 400 : 202), "upload \(n): \(status)") }
        let count = try runProcess("sqlite3", [h.dbPath, "SELECT count(*) FROM reports"])
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "\(bodies.count - 1)", "\(count.summary)")
        #expect(Self.healthy(server))
        // The uploads did share batches (the log says so at debug level), so the above tested them.
        #expect(server.log.contains("parse batch"), "no batch of several inputs: \(server.log.suffix(1500))")
    }

    /// The fatal input sits in the middle of one batch for sure: every input waits behind one
    /// that hangs the only child, and then goes in one write to the next child. A child answers
    /// a batch in one write, so its death says nothing of which input killed it: only the
    /// fatal one may be refused, never the inputs before or after it.
    /// A real 2.7 KB AddressSanitizer report (Tests/Fixtures/wild/asan), made distinct: small
    /// enough that a child reads a whole batch in one read and answers it in one write.
    static func smallReport(_ n: Int, marker: String = "") throws -> Data {
        let path = TestPaths.packageRoot + "/Tests/Fixtures/wild/asan/gcc-heap-use-after-free.txt"
        return try Data(contentsOf: URL(fileURLWithPath: path)) + Data("\nvariant \(n) \(marker)\n".utf8)
    }

    @Test func aFatalInputInsideABatchRefusesOnlyItself() throws {
        let h = try Harness()
        let ingest = try h.token("ingest")
        let server = try h.startServer(
            ["--workers", "0", "--parsers", "1", "--parse-timeout", "2", "--ingest-rate", "0", "--log-level", "debug"])
        let dir = try TempDirectory("batch")
        defer { dir.remove() }
        var bodies = try (0..<7).map { try Self.smallReport(200 + $0) }
        bodies[0] = try Self.smallReport(198, marker: "STACKLINE_TEST_HOOK_PARSE_HANG")
        let fatal = 4
        bodies[fatal] = try Self.smallReport(199, marker: "STACKLINE_TEST_HOOK_PARSE_SEGV")
        let statuses = try Self.postConcurrently(bodies, to: server.baseURL + "/api/v1/reports", token: ingest, in: dir, headStart: 0.5)
        #expect(statuses == [400, 202, 202, 202, 400, 202, 202], "\(statuses)")
        let count = try runProcess("sqlite3", [h.dbPath, "SELECT count(*) FROM reports"])
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "5", "\(count.summary)")
        // The six inputs behind the hung one did go to the next child in one write.
        #expect(server.log.contains("inputs=6"), "no batch of six: \(server.log.suffix(2000))")
        #expect(Self.healthy(server))
    }
}
