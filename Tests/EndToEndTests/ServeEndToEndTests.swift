import Foundation
import ReportModel
import TestSupport
import Testing

extension Harness {
    /// `stackline serve` on a free loopback port against this harness's database and store.
    func startServer(_ arguments: [String], log: String = "serve") throws -> ServerProcess {
        try ServerProcess(
            arguments: ["--symbols", symbolsPath] + arguments, environment: environment,
            logPath: dir.file("\(log)-\(UUID().uuidString.prefix(6)).log"))
    }

    /// A new token of `scope`, as `stackline tokens create` prints it.
    func token(_ scope: String, _ more: [String] = []) throws -> String {
        let out = try stackline(["tokens", "create", "--scope", scope] + more)
        #expect(out.status == 0, "tokens create: \(out.stderr)")
        return out.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// SHA-256 of bytes by coreutils' sha256sum: the digest oracle.
func sha256sum(_ data: Data) throws -> String {
    let out = try runProcess("sha256sum", [], stdin: data)
    return String(out.stdout.prefix(64))
}

/// Child processes of `pid`, from every thread's /proc children list.
func childPids(of pid: Int32) -> [Int32] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return tasks.flatMap { tid in
        ((try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/children", encoding: .utf8)) ?? "")
            .split(separator: " ").compactMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }
}

/// Whether `pid` is a `stackline-worker --parse` (its command line, from /proc).
func isParseChild(_ pid: Int32) -> Bool {
    let arguments = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map { $0.split(separator: 0) } ?? []
    return arguments.last.map { String(decoding: $0, as: UTF8.self) } == "--parse"
}

/// The nice value of a process: field 19 of /proc/PID/stat.
func niceValue(of pid: Int32) -> Int? {
    guard let fields = procStatFields(of: pid), fields.count > 16 else { return nil }
    return Int(fields[16])
}

func gzipped(_ data: Data) throws -> Data {
    let dir = try makeTemporaryDirectory(prefix: "gz")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try data.write(to: URL(fileURLWithPath: dir + "/r"))
    _ = try runChecked("gzip", ["-n", dir + "/r"])
    return try Data(contentsOf: URL(fileURLWithPath: dir + "/r.gz"))
}

/// `stackline serve` driven by curl, where the checks need real processes: a body streamed over a
/// socket, workers that symbolicate, the CLI's answers beside the API's.
@Suite(.serialized) struct ServeEndToEndTests {
    func report(_ n: Int, marker: String? = nil) throws -> Data {
        variant(of: try CrashFixture.shared.report(symbolicate: "off"), number: n, marker: marker)
    }

    // Authentication and scopes, the 202 body, gzip bodies, Content-Length limits, bombs,
    // malformed reports and the rate limit are route checks: ServerTests' RouteTests drives them
    // in process. What needs a real socket stays here.

    @Test func refusesAChunkedBodyPastTheLimitAsItStreams() throws {
        let h = try Harness()
        let token = try h.token("ingest")
        let server = try h.startServer(["--workers", "0", "--max-body", "200000"])
        // No Content-Length: the body is counted as it streams and refused once past the limit.
        let big = Data(repeating: UInt8(ascii: "a"), count: 300_000)
        let chunked = try server.curl("POST", "/api/v1/reports", token: token, body: big, headers: ["Transfer-Encoding: chunked"])
        #expect(chunked.status == 413, "\(chunked)")
        #expect(chunked.json?["error"] != nil)
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM reports") == 0)
        let metrics = try server.curl("GET", "/metrics", token: try h.token("read"))
        #expect(metrics.text.contains(#"stackline_reports_refused_total{reason="too_large"} 1"#), "\(metrics.text)")
    }

    @Test func queriesAnswerWhatTheCLIPrintsWithJSON() throws {
        let h = try Harness()
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let server = try h.startServer(["--workers", "1"])
        var ids: [Int] = []
        // Report 11 goes up as gzip: the server keeps the sender's gzip as the stored form (it
        // does not compress again), and the worker must read it back like any stored report.
        let gzip = try gzipped(try report(11))
        for n in 10..<13 {
            let answer = n == 11
                ? try server.curl("POST", "/api/v1/reports", token: ingest, body: gzip, headers: ["Content-Encoding: gzip"])
                : try server.curl("POST", "/api/v1/reports", token: ingest, body: try report(n))
            ids.append(try #require(answer.json?["id"] as? Int))
        }
        let storedHex = try sqlite(h.dbPath, "SELECT hex(raw) AS raw FROM reports WHERE id = \(ids[1])").first?["raw"] as? String
        #expect(storedHex == gzip.map { String(format: "%02X", $0) }.joined())
        // One log line per request, without the token.
        #expect(server.log.contains("path=/api/v1/reports"))
        #expect(server.log.contains("status=202"))
        #expect(!server.log.contains(ingest))
        try h.waitUntil("the reports to be symbolicated", timeout: 120) {
            try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state = 'done'") == 3
        }
        // The local workers run at serve's default --worker-nice 10 (the kernel's word, /proc);
        // the parse children are on the ingest path and keep serve's priority.
        let children = childPids(of: server.process.processIdentifier)
        let parsers = children.filter { isParseChild($0) }
        let workers = children.filter { !isParseChild($0) }
        #expect(!workers.isEmpty && !parsers.isEmpty, "children: \(children)")
        for pid in workers { #expect(niceValue(of: pid) == 10, "worker \(pid)") }
        for pid in parsers { #expect(niceValue(of: pid) == 0, "parse child \(pid)") }
        let ready = try server.curl("GET", "/readyz")
        #expect(ready.status == 200, "\(ready)")

        func same(_ path: String, _ cli: [String]) throws {
            let api = try server.curl("GET", path, token: read)
            #expect(api.status == 200, "\(path): \(api)")
            let printed = try h.stackline(cli + ["--json"])
            #expect(printed.status == 0)
            let a = try JSONSerialization.jsonObject(with: api.body) as? NSObject
            let b = try JSONSerialization.jsonObject(with: Data(printed.stdout.utf8)) as? NSObject
            #expect(a != nil && a == b, "\(path) differs from `stackline \(cli.joined(separator: " "))`")
        }
        try same("/api/v1/status", ["status"])
        try same("/api/v1/status/\(ids[0])", ["status", "\(ids[0])"])
        try same("/api/v1/groups", ["groups"])
        try same("/api/v1/groups?kind=crash&limit=5&since=7d", ["groups", "--kind", "crash", "--limit", "5", "--since", "7d"])
        try same("/api/v1/reports/\(ids[1])", ["report", "\(ids[1])"])
        try same("/api/v1/symbols/missing", ["symbols", "missing", "--symbols", h.symbolsPath])

        // Against plain SQL: one group of three.
        let groups = try #require(try JSONSerialization.jsonObject(with: try server.curl("GET", "/api/v1/groups", token: read).body) as? [[String: Any]])
        let fingerprint = try #require(try sqlite(h.dbPath, "SELECT fingerprint FROM groups").first?["fingerprint"] as? String)
        #expect(groups.map { $0["fingerprint"] as? String } == [fingerprint])
        #expect(groups.first?["count"] as? Int == (try sqliteInt(h.dbPath, "SELECT count FROM groups")))
        try same("/api/v1/groups/\(fingerprint)", ["group", fingerprint])

        let text = try server.curl("GET", "/api/v1/reports/\(ids[0])?format=text", token: read)
        #expect(text.status == 200)
        #expect(text.text == (try h.stackline(["report", "\(ids[0])", "--format", "text"])).stdout.dropLast())
        #expect(try server.curl("GET", "/api/v1/reports/\(ids[0])?format=apple", token: read).status == 200)
        // The refusals' statuses and shape: ServerTests' RouteTests.queryRefusalsHaveTheErrorShape.
    }

    @Test func symbolicatesOnTheSpotInAWorkerAndSurvivesPoison() throws {
        let h = try Harness()
        let read = try h.token("read")
        // The program's debug file in the store; the runtime's own symbolication is the oracle.
        _ = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, try CrashFixture.shared.binary()])
        let server = try h.startServer(["--workers", "0", "--symbolicate-timeout", "3"])
        let raw = try CrashFixture.shared.report(symbolicate: "off", cached: false)
        let oracle = try CrashFixture.shared.report(symbolicate: "full", cached: false)

        let answer = try server.curl("POST", "/api/v1/symbolicate", token: read, body: raw)
        #expect(answer.status == 200, "\(answer)")
        let symbolicated = try JSONDecoder().decode(SymbolicatedReport.self, from: answer.body)
        let ours = Set(symbolicated.threads.first { $0.crashed }?.frames.compactMap { $0.status == .symbolicated ? $0.symbol : nil } ?? [])
        let theirs = try oracleSymbols(oracle, image: (try CrashFixture.shared.binary() as NSString).lastPathComponent)
        #expect(!theirs.isEmpty && theirs.isSubset(of: ours), "runtime: \(theirs), ours: \(ours)")
        // Nothing stored or queued.
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM reports") == 0)
        // Plain text too.
        let text = try server.curl("POST", "/api/v1/symbolicate?format=text", token: read, body: raw)
        #expect(text.status == 200)

        // A report that crashes its worker: 502, and the server carries on.
        let poison = try self.report(20, marker: "STACKLINE_TEST_HOOK_SEGV")
        let crash = try server.curl("POST", "/api/v1/symbolicate", token: read, body: poison)
        #expect(crash.status == 502, "\(crash)")
        #expect((crash.json?["error"] as? String)?.contains("SIGSEGV") == true, "\(crash)")
        // One that hangs it: 504 once the timeout kills it.
        let started = Date()
        let hanging = try self.report(21, marker: "STACKLINE_TEST_HOOK_HANG")
        let hang = try server.curl("POST", "/api/v1/symbolicate", token: read, body: hanging)
        #expect(hang.status == 504, "\(hang)")
        #expect(Date().timeIntervalSince(started) < 60)
        #expect(try server.curl("GET", "/healthz").status == 200)
        #expect(try server.curl("POST", "/api/v1/symbolicate", token: read, body: raw).status == 200)
        #expect(try server.curl("POST", "/api/v1/symbolicate", token: read, body: Data("junk".utf8)).status == 400)
        // The hung worker was killed, not left behind (the parse children stay: they serve every request).
        let workers = childPids(of: server.pid).filter { !isParseChild($0) }
        #expect(workers.isEmpty, "workers left: \(workers)")
    }

    /// The linkage names of the crashed thread's frames in `image`, as the runtime symbolicated them.
    func oracleSymbols(_ data: Data, image: String) throws -> Set<String> {
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let thread = try #require((json["threads"] as? [[String: Any]])?.first { $0["crashed"] as? Bool == true })
        return Set((thread["frames"] as? [[String: Any]] ?? []).compactMap { frame in
            frame["image"] as? String == image && frame["inlined"] as? Bool != true ? frame["symbol"] as? String : nil
        })
    }
}

/// `--tls-cert`/`--tls-key`: HTTPS through swift-nio-ssl, checked with curl and an openssl-made certificate.
@Suite(.serialized) struct ServeTLSTests {
    @Test func servesHTTPSWithTheGivenCertificate() throws {
        let h = try Harness()
        let read = try h.token("read")
        let (cert, key) = try h.loopbackCertificate()
        let server = try h.startServer(["--workers", "0", "--tls-cert", cert, "--tls-key", key])
        let https = "https://127.0.0.1:\(server.port)"
        let health = try HTTPAnswer.curl("GET", https + "/healthz", extra: ["--cacert", cert])
        #expect(health.status == 200, "\(health)")
        let status = try HTTPAnswer.curl("GET", https + "/api/v1/status", token: read, extra: ["--cacert", cert])
        #expect(status.status == 200)
        #expect(status.json?["queued"] as? Int == 0)
        // Served over TLS itself, the web view's session cookie is Secure without any proxy header.
        let login = try HTTPAnswer.curl("POST", https + "/login", body: Data("token=\(read)".utf8), extra: ["--cacert", cert])
        #expect(login.status == 303, "\(login)")
        #expect(login.headers["set-cookie"]?.contains("; Secure") == true, "\(login.headers)")
        // Without the certificate curl refuses the connection; plain HTTP gets no answer.
        #expect(try HTTPAnswer.curl("GET", https + "/healthz").status == 0)
        #expect(try server.curl("GET", "/healthz").status != 200)

        // A key that is not one: a clear error, exit status 1.
        let bad = h.dir.file("bad.pem")
        try Data("not a key\n".utf8).write(to: URL(fileURLWithPath: bad))
        let refused = try h.stackline(["serve", "--listen", "127.0.0.1:0", "--workers", "0", "--tls-cert", cert, "--tls-key", bad])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("cannot read the private key"), "\(refused.stderr)")
    }
}
