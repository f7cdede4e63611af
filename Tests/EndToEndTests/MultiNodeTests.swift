import Foundation
import TestSupport
import Testing

/// nginx (Debian's) on loopback, configured from `docs/nginx.conf.example` with the nodes' and
/// its own addresses substituted, as a child of the test: its own prefix, pid, logs and temp
/// paths under `dir`, `daemon off`, one worker process. Its master, not a single-process nginx:
/// the test runner's blocked signals are inherited, and only the master and worker unblock them.
final class NginxProxy {
    let process = Process()
    let dir: String
    let port: Int

    /// The shipped example.
    static var examplePath: String { TestPaths.packageRoot + "/docs/nginx.conf.example" }

    /// `nodes`: the `stackline serve` ports standing for the example's two upstream addresses.
    init(nodes: [Int], dir: String) throws {
        self.dir = dir
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        port = try freeLoopbackPort()
        var site = try String(contentsOfFile: Self.examplePath, encoding: .utf8)
        // Each substitution must find its text, so the test fails when the example changes shape
        // instead of silently running another configuration.
        func substitute(_ text: String, _ replacement: String, atLeast: Int = 1) throws {
            let found = site.components(separatedBy: text).count - 1
            guard found >= atLeast else { throw TestSupportError("docs/nginx.conf.example: \(text) found \(found) times") }
            site = site.replacingOccurrences(of: text, with: replacement)
        }
        try substitute("10.0.0.11:8080", "127.0.0.1:\(nodes[0])", atLeast: 2)
        try substitute("10.0.0.12:8080", "127.0.0.1:\(nodes[1])", atLeast: 2)
        try substitute("listen 80;", "listen 127.0.0.1:\(port);")
        try site.write(toFile: dir + "/stackline.conf", atomically: true, encoding: .utf8)
        // The main context around it, as /etc/nginx/nginx.conf would include conf.d/: only paths
        // of the test's own, and an access log that names the node (or nodes) each request went to.
        let main = """
            daemon off;
            \(geteuid() == 0 ? "user root;" : "")
            worker_processes 1;
            pid \(dir)/nginx.pid;
            lock_file \(dir)/nginx.lock;
            error_log \(dir)/error.log info;
            events { worker_connections 512; }
            http {
                log_format nodes '$request_method $uri $status upstream=$upstream_addr upstream_status=$upstream_status';
                access_log \(dir)/access.log nodes;
                client_body_temp_path \(dir)/body;
                proxy_temp_path \(dir)/proxy;
                fastcgi_temp_path \(dir)/fastcgi;
                uwsgi_temp_path \(dir)/uwsgi;
                scgi_temp_path \(dir)/scgi;
                include \(dir)/stackline.conf;
            }
            """
        try main.write(toFile: dir + "/nginx.conf", atomically: true, encoding: .utf8)
        let arguments = ["-p", dir, "-c", dir + "/nginx.conf", "-e", dir + "/error.log"]
        let check = try runProcess("/usr/sbin/nginx", ["-t"] + arguments)
        guard check.succeeded else { throw TestSupportError("nginx -t refused the configuration: \(check.summary)") }

        let output = dir + "/nginx.out"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: output)
        process.standardError = FileHandle(forWritingAtPath: output)
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while try HTTPAnswer.curl("GET", baseURL + "/healthz").status != 200 {
            guard process.isRunning else { throw TestSupportError("nginx exited at start: \(errorLog)") }
            guard Date() < deadline else {
                stop()
                throw TestSupportError("nginx did not answer on port \(port): \(errorLog)")
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    deinit { stop() }

    var baseURL: String { "http://127.0.0.1:\(port)" }
    var accessLog: [String] {
        ((try? String(contentsOfFile: dir + "/access.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
    var errorLog: String { (try? String(contentsOfFile: dir + "/error.log", encoding: .utf8)) ?? "" }

    func curl(_ method: String = "GET", _ path: String, token: String? = nil, body: Data? = nil, headers: [String] = []) throws
        -> HTTPAnswer
    {
        try HTTPAnswer.curl(method, baseURL + path, token: token, body: body, headers: headers)
    }

    /// SIGTERM (nginx's fast shutdown), then SIGKILL to its worker and itself if it is still
    /// there after a while.
    func stop() {
        guard process.isRunning else { return }
        let pid = process.processIdentifier
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning {
            for child in childPids(of: pid) { kill(child, SIGKILL) }
            kill(pid, SIGKILL)
        }
        process.waitUntilExit()
    }
}

/// Two `stackline serve` nodes on one PostgreSQL database, behind nginx configured from the
/// shipped `docs/nginx.conf.example`: concurrent uploads through the proxy are stored once and
/// processed once, by both nodes' workers, with exact group counts; the nodes answer the same;
/// duplicates racing on two nodes are one report; a symbol upload through the proxy is served by
/// both nodes; alerts are sent once; and the proxy sends reads and uploads to the other node when
/// one answers 503 (its database unreachable) or stops.
@Suite(.serialized) struct MultiNodeTests {
    /// The node's request log lines with a 5xx status.
    static func serverErrors(_ log: String) -> [Substring] {
        log.split(separator: "\n").filter { $0.range(of: #"status=5\d\d"#, options: .regularExpression) != nil }
    }

    /// How many "job done" lines a node logged (one per result it stored).
    static func jobsDone(_ log: String) -> Int {
        log.split(separator: "\n").filter { $0.contains("job done") }.count
    }

    /// The store, read through psql: every report stored once with one job, done, and one
    /// result; every group's count the number of its results.
    static func checkStore(_ h: Harness, reports expected: Int, _ context: String) throws {
        #expect(try h.sqlInt("SELECT COUNT(*) FROM reports") == expected, "\(context): reports")
        #expect(try h.sqlInt("SELECT COUNT(DISTINCT digest) FROM reports") == expected, "\(context): distinct digests")
        #expect(try h.sqlInt("SELECT COUNT(*) FROM jobs") == expected, "\(context): one job per report")
        #expect(try h.sqlInt("SELECT COUNT(*) FROM jobs WHERE state <> 'done'") == 0,
                "\(context): \(String(describing: try? h.sql("SELECT id, report_id, state, attempts, last_error FROM jobs WHERE state <> 'done'")))")
        #expect(try h.sqlInt("SELECT COUNT(*) FROM (SELECT report_id FROM jobs GROUP BY report_id HAVING COUNT(*) <> 1) AS j") == 0,
                "\(context): a report with other than one job")
        #expect(try h.sqlInt("SELECT COUNT(*) FROM results") == expected, "\(context): results")
        #expect(try h.sqlInt("SELECT COUNT(*) FROM reports r WHERE NOT EXISTS (SELECT 1 FROM results s WHERE s.report_id = r.id)") == 0,
                "\(context): a report without its result")
        // A job claimed once: a second attempt would mean a lease lost to the other node.
        #expect(try h.sqlInt("SELECT COUNT(*) FROM jobs WHERE attempts <> 1") == 0,
                "\(context): \(String(describing: try? h.sql("SELECT id, report_id, attempts, last_error FROM jobs WHERE attempts <> 1")))")
        let groups = try h.sql(
            "SELECT g.fingerprint, g.count, (SELECT COUNT(*) FROM results s WHERE s.fingerprint = g.fingerprint) AS n FROM groups g")
        #expect(!groups.isEmpty, "\(context): no group")
        for group in groups {
            #expect(group["count"] as? Int == group["n"] as? Int, "\(context): group \(group)")
        }
        #expect(try h.sqlInt("SELECT COALESCE(SUM(count), 0) FROM groups")
                == h.sqlInt("SELECT COUNT(*) FROM results WHERE fingerprint IS NOT NULL"), "\(context): grouped results")
    }

    /// A rules file with one `new_group` rule that posts to a webhook receiver of the test's own.
    static func newGroupAlerts(_ h: Harness) throws -> (receiver: WebhookReceiver, rulesPath: String) {
        let receiver = try WebhookReceiver(dir: h.dir.path, failures: 0)
        let rulesPath = h.dir.file("alerts.json")
        try """
            {"pollSeconds": 0.3,
             "targets": {"hook": {"type": "webhook", "url": "http://127.0.0.1:\(receiver.port)/hook"}},
             "rules": [{"name": "new-crash", "kind": "new_group", "severity": "critical", "targets": ["hook"]}]}
            """.write(toFile: rulesPath, atomically: true, encoding: .utf8)
        return (receiver, rulesPath)
    }

    @Test func twoNodesBehindNginxStoreAndProcessEveryReportOnce() throws {
        let started = Date()
        let h = try Harness(backend: .postgres)
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let symbols = try h.token("symbols")

        // One alert rule. Both nodes run the rules on the one cursor in the database (one of them
        // at a time evaluates); each new group must be one event, delivered once (step 7).
        let (receiver, rulesPath) = try Self.newGroupAlerts(h)

        // Behind the proxy every connection comes from its address: no per-address cap.
        let arguments = ["--workers", "1", "--max-connections-per-address", "0", "--alerts", rulesPath]
        let nodeA = try h.startServer(arguments, log: "node-a")
        defer { if nodeA.process.isRunning { nodeA.signal(SIGKILL) } }
        // Node B connects as a role of its own (a superuser, like the harness's), so the test can
        // take the database away from node B alone (step 8).
        let cluster = try PostgresCluster.shared.get()
        let roleB = "stackline_node_b_\(getpid())_\(UUID().uuidString.prefix(8).lowercased())"
        try cluster.psql("CREATE ROLE \(roleB) LOGIN SUPERUSER")
        defer { _ = try? cluster.psql("ALTER ROLE \(roleB) LOGIN") }
        let urlB = h.dbPath.replacingOccurrences(of: "postgres://postgres@", with: "postgres://\(roleB)@")
        #expect(urlB != h.dbPath, "\(h.dbPath)")
        let nodeB = try h.startServer(["--db", urlB] + arguments, log: "node-b")
        defer { if nodeB.process.isRunning { nodeB.signal(SIGKILL) } }
        let nginx = try NginxProxy(nodes: [nodeA.port, nodeB.port], dir: h.dir.file("nginx"))
        defer { nginx.stop() }
        let (portA, portB) = (nodeA.port, nodeB.port)
        let upstreamA = "127.0.0.1:\(portA)", upstreamB = "127.0.0.1:\(portB)"

        // 1. N distinct reports of one crash through nginx, from 4 clients at once.
        let count = 200
        let base = try CrashFixture.shared.report(symbolicate: "off")
        let bodies = (0..<count).map { variant(of: base, number: $0) }
        let answers = Locked<[Int: HTTPAnswer]>([:])
        let failures = Locked<[String]>([])
        let proxyURL = nginx.baseURL
        let postStarted = Date()
        DispatchQueue.concurrentPerform(iterations: 4) { client in
            for i in stride(from: client, to: count, by: 4) {
                do {
                    let answer = try HTTPAnswer.curl("POST", proxyURL + "/api/v1/reports", token: ingest, body: bodies[i])
                    answers.mutate { $0[i] = answer }
                } catch {
                    failures.mutate { $0.append("report \(i): \(error)") }
                }
            }
        }
        let postSeconds = Date().timeIntervalSince(postStarted)
        #expect(failures.value.isEmpty, "\(failures.value)")
        var ids: [Int: Int] = [:]
        for (i, answer) in answers.value.sorted(by: { $0.key < $1.key }) {
            #expect(answer.status == 202, "report \(i): \(answer)")
            #expect(answer.json?["duplicate"] as? Bool == false, "report \(i): \(answer)")
            if let id = answer.json?["id"] as? Int { ids[i] = id } else { Issue.record("report \(i) has no id: \(answer)") }
        }
        #expect(ids.count == count)
        #expect(Set(ids.values).count == count, "two uploads answered the same id")
        // nginx spread them: each node stored some.
        let reportPosts = nginx.accessLog.filter { $0.hasPrefix("POST /api/v1/reports ") }
        #expect(reportPosts.count == count)
        #expect(reportPosts.contains { $0.contains("upstream=\(upstreamA) ") }, "no upload went to node A")
        #expect(reportPosts.contains { $0.contains("upstream=\(upstreamB) ") }, "no upload went to node B")

        // 2. The same bytes sent to both nodes at once: one report, both told its id, one of
        // them that it is a duplicate. This is what makes a retried POST safe (the example's
        // `non_idempotent`).
        let raced = 10
        for k in 0..<raced {
            let body = variant(of: base, number: 10_000 + k)
            let pair = Locked<[Int: HTTPAnswer]>([:])
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                let url = "http://127.0.0.1:\(side == 0 ? portA : portB)/api/v1/reports"
                do {
                    let answer = try HTTPAnswer.curl("POST", url, token: ingest, body: body)
                    pair.mutate { $0[side] = answer }
                } catch {
                    failures.mutate { $0.append("race \(k) side \(side): \(error)") }
                }
            }
            let both = pair.value
            #expect(both.count == 2 && both.values.allSatisfy { $0.status == 202 }, "race \(k): \(both)")
            let raceIds = Set(both.values.compactMap { $0.json?["id"] as? Int })
            #expect(raceIds.count == 1, "race \(k): two reports for one body: \(both)")
            #expect(both.values.compactMap { $0.json?["duplicate"] as? Bool }.map(String.init).sorted() == ["false", "true"], "race \(k): \(both)")
        }
        // A report sent again through the proxy (a client's or nginx's retry): the first id.
        for i in stride(from: 0, to: count, by: count / 10) {
            let again = try nginx.curl("POST", "/api/v1/reports", token: ingest, body: bodies[i])
            #expect(again.status == 202 && again.json?["duplicate"] as? Bool == true, "resent \(i): \(again)")
            #expect(again.json?["id"] as? Int == ids[i], "resent \(i): \(again)")
        }
        #expect(failures.value.isEmpty, "\(failures.value)")

        // 3. Every job done, then the store read through psql.
        let total = count + raced
        let processStarted = Date()
        try h.waitUntil("every report to be processed", timeout: 900) {
            try h.sqlInt("SELECT COUNT(*) FROM jobs WHERE state IN ('done', 'failed')") >= total
        }
        let processSeconds = Date().timeIntervalSince(processStarted)
        try Self.checkStore(h, reports: total, "after the uploads")

        // Both nodes' workers took jobs: each node logs "job done" for the results it stored
        // (the database records no node per job). Together, one line per report.
        let doneA = Self.jobsDone(nodeA.log), doneB = Self.jobsDone(nodeB.log)
        #expect(doneA > 0, "node A's worker processed nothing")
        #expect(doneB > 0, "node B's worker processed nothing")
        #expect(doneA + doneB == total, "job done lines: A \(doneA) + B \(doneB), reports \(total)")

        // 4. The group list through nginx and from each node directly: the same document.
        let viaProxy = try nginx.curl("GET", "/api/v1/groups", token: read)
        let fromA = try nodeA.curl("GET", "/api/v1/groups", token: read)
        let fromB = try nodeB.curl("GET", "/api/v1/groups", token: read)
        for answer in [viaProxy, fromA, fromB] { #expect(answer.status == 200, "\(answer)") }
        #expect(viaProxy.body == fromA.body && fromA.body == fromB.body,
                "groups differ:\nproxy \(viaProxy.text.prefix(800))\nA \(fromA.text.prefix(800))\nB \(fromB.text.prefix(800))")
        // And the same once parsed (keys sorted), should the bytes ever differ only in key order.
        func canonical(_ data: Data) throws -> Data {
            try JSONSerialization.data(withJSONObject: try JSONSerialization.jsonObject(with: data), options: [.sortedKeys])
        }
        #expect(try canonical(viaProxy.body) == canonical(fromA.body) && canonical(fromA.body) == canonical(fromB.body))
        #expect(viaProxy.headers["cache-control"] == "private", "\(viaProxy.headers)")

        // 5. Host and X-Forwarded-Proto as the example sets them: the sign-in form through the
        // proxy passes serve's Origin check against the Host the browser used, and a client's own
        // X-Forwarded-Proto is replaced by nginx's scheme (http here: no Secure cookie). Straight
        // to a node, the same header is believed, so the check is not vacuous. The cookie made
        // through the proxy opens pages on both nodes (the session key is in the database).
        let form = Data("token=\(read)".utf8)
        let login = try nginx.curl(
            "POST", "/login", body: form,
            headers: ["Content-Type: application/x-www-form-urlencoded", "Origin: \(nginx.baseURL)", "X-Forwarded-Proto: https"])
        #expect(login.status == 303, "\(login)")
        let cookie = try #require(login.headers["set-cookie"], "\(login.headers)")
        #expect(!cookie.contains("Secure"), "\(cookie)")
        let direct = try nodeA.curl(
            "POST", "/login", body: form,
            headers: ["Content-Type: application/x-www-form-urlencoded", "Origin: \(nodeA.baseURL)", "X-Forwarded-Proto: https"])
        #expect(direct.status == 303 && direct.headers["set-cookie"]?.contains("Secure") == true, "\(direct) \(direct.headers)")
        let session = try #require(cookie.split(separator: ";").first.map(String.init))
        for node in [nodeA, nodeB] {
            let page = try node.curl("GET", "/", headers: ["Cookie: \(session)"])
            #expect(page.status == 200, "node \(node.port): \(page)")
        }

        // 6. A debug file over serve's 16 MiB body limit, uploaded through the proxy (the
        // example's symbols location), is served by both nodes (one store).
        let build = h.dir.file("build")
        try FileManager.default.createDirectory(atPath: build, withIntermediateDirectories: true)
        try """
            const unsigned char blob[17 * 1024 * 1024] = {1};
            int main(int argc, char **argv) { (void)argv; return blob[argc]; }
            """.write(toFile: build + "/big.c", atomically: true, encoding: .utf8)
        try runChecked("gcc", ["-g", "-O0", "-Wl,--build-id", "-o", build + "/big", build + "/big.c"])
        let buildID = try #require(try readelfBuildID(build + "/big"))
        let file = try Data(contentsOf: URL(fileURLWithPath: build + "/big"))
        #expect(file.count > 16 << 20)
        let upload = try runProcess(
            TestPaths.stackline, ["symbols", "upload", "--server", nginx.baseURL, build + "/big"],
            environment: ["STACKLINE_TOKEN": symbols], timeout: 300)
        #expect(upload.succeeded, "\(upload.summary)\n\(nginx.errorLog.suffix(2000))")
        #expect(upload.stdout.contains("uploaded 1 file"), "\(upload.stdout)")
        let symbolPosts = nginx.accessLog.filter { $0.hasPrefix("POST /api/v1/symbols ") }
        #expect(symbolPosts.count == 1 && symbolPosts.allSatisfy { $0.contains(" 200 ") }, "\(symbolPosts)")
        for (name, answer) in [
            ("proxy", try nginx.curl("GET", "/buildid/\(buildID)/debuginfo", token: read)),
            ("A", try nodeA.curl("GET", "/buildid/\(buildID)/debuginfo", token: read)),
            ("B", try nodeB.curl("GET", "/buildid/\(buildID)/debuginfo", token: read)),
        ] {
            #expect(answer.status == 200 && answer.body == file, "\(name): HTTP \(answer.status), \(answer.body.count) bytes")
        }

        // 7. Alerts: each new group is one event, delivered once, with two nodes running the
        // rules. Checked once the cursor has passed every result and nothing is pending, when a
        // second event could no longer come.
        try h.waitUntil("the alert cursor to pass every result and every delivery to be done", timeout: 300) {
            try h.sqlInt(
                "SELECT COUNT(*) FROM alert_cursors WHERE value >= (SELECT COALESCE(MAX(position), 0) FROM results)") == 1
                && h.sqlInt("SELECT COUNT(*) FROM alert_deliveries WHERE state <> 'delivered'") == 0
        }
        let groupCount = try h.sqlInt("SELECT COUNT(*) FROM groups")
        #expect(try h.sqlInt("SELECT COUNT(*) FROM alert_events WHERE kind = 'new_group'") == groupCount)
        #expect(try h.sqlInt("SELECT COUNT(*) FROM alert_events") == groupCount)
        let hooks = receiver.requests.filter { $0["path"] as? String == "/hook" }
        #expect(hooks.count == groupCount, "webhooks: \(hooks.count), groups: \(groupCount)")
        #expect(Set(hooks.compactMap { $0["event"] as? String }).count == hooks.count, "an event delivered twice")

        // 8. Node B loses the database (its role may no longer log in, its sessions are ended),
        // node A keeps it: B answers 503 with Retry-After, and nginx asks A instead
        // (`http_503`), for the group list and, by `non_idempotent`, for uploads.
        #expect(try h.sqlInt("SELECT COUNT(*) FROM pg_stat_activity WHERE usename = '\(roleB)'") > 0, "node B is not on its role")
        let doneBeforeOutage = (a: Self.jobsDone(nodeA.log), b: Self.jobsDone(nodeB.log))
        try cluster.psql("ALTER ROLE \(roleB) NOLOGIN")
        try cluster.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '\(roleB)'")
        try h.waitUntil("node B to be unready for its database", timeout: 120) { try nodeB.curl("GET", "/readyz").status == 503 }
        let refused = try nodeB.curl("POST", "/api/v1/reports", token: ingest, body: variant(of: base, number: 30_000))
        #expect(refused.status == 503 && refused.headers["retry-after"] != nil, "node B during its outage: \(refused) \(refused.headers)")
        // nginx alternates between the nodes, and takes B out only after 3 failures: of two
        // requests in a row one is first sent to B. So two reads, then the uploads, each meet B once.
        for _ in 0..<2 {
            let groups = try nginx.curl("GET", "/api/v1/groups", token: read)
            #expect(groups.status == 200, "groups during B's outage: \(groups)")
        }
        let outageReads = nginx.accessLog.filter { $0.hasPrefix("GET /api/v1/groups ") }.suffix(2)
        #expect(outageReads.contains { $0.hasSuffix("upstream=\(upstreamB), \(upstreamA) upstream_status=503, 200") },
                "no read retried from B's 503 to A: \(outageReads)")
        /// `n` new reports through the proxy, each answered 202 as new; nginx's log lines of them.
        func postNew(_ n: Int, from number: Int, _ context: String) throws -> ArraySlice<String> {
            for k in 0..<n {
                let answer = try nginx.curl("POST", "/api/v1/reports", token: ingest, body: variant(of: base, number: number + k))
                #expect(answer.status == 202 && answer.json?["duplicate"] as? Bool == false, "\(context), \(k): \(answer)")
            }
            return nginx.accessLog.filter { $0.hasPrefix("POST /api/v1/reports ") }.suffix(n)
        }
        let outage = 20
        let duringOutage = try postNew(outage, from: 20_000, "during B's outage")
        // Each answered by node A (the last node a line names is the one that answered).
        #expect(duringOutage.allSatisfy { $0.contains(" 202 ") && $0.contains("\(upstreamA) upstream_status=") }, "\(duringOutage)")
        #expect(duringOutage.contains { $0.hasSuffix("upstream=\(upstreamB), \(upstreamA) upstream_status=503, 202") },
                "no upload retried from B's 503 to A: \(duringOutage)")
        try cluster.psql("ALTER ROLE \(roleB) LOGIN")
        try h.waitUntil("node B to be ready again", timeout: 120) { try nodeB.curl("GET", "/readyz").status == 200 }
        // nginx tries B again once its fail_timeout has passed: reads until one is B's alone.
        try h.waitUntil("nginx to send requests to node B again", timeout: 120) {
            _ = try nginx.curl("GET", "/api/v1/groups", token: read)
            return nginx.accessLog.last?.hasSuffix("upstream=\(upstreamB) upstream_status=200") == true
        }
        try h.waitUntil("the uploads during B's outage to be processed", timeout: 600) {
            try h.sqlInt("SELECT COUNT(*) FROM jobs WHERE state IN ('done', 'failed')") >= total + outage
        }
        // The upload B refused was not stored: `total + outage` reports.
        try Self.checkStore(h, reports: total + outage, "after node B's outage")
        #expect(Self.jobsDone(nodeA.log) + Self.jobsDone(nodeB.log) == doneBeforeOutage.a + doneBeforeOutage.b + outage)

        // 9. Node B stops: nginx sends what would have gone to it to node A (`error`: the
        // connection is refused, nothing was sent), and every upload is still answered 202.
        nodeB.signal(SIGTERM)
        #expect(try nodeB.waitForExit() == 0, "\(nodeB.log.suffix(2000))")
        let doneAtStop = (a: Self.jobsDone(nodeA.log), b: Self.jobsDone(nodeB.log))
        let after = 20
        let late = try postNew(after, from: 40_000, "after B stopped")
        #expect(late.allSatisfy { $0.contains(" 202 ") && $0.contains("\(upstreamA) upstream_status=") }, "\(late)")
        #expect(late.contains { $0.contains("upstream=\(upstreamB), \(upstreamA) ") }, "no retry from B to A: \(late)")
        try h.waitUntil("the uploads after B stopped to be processed", timeout: 600) {
            try h.sqlInt("SELECT COUNT(*) FROM jobs WHERE state IN ('done', 'failed')") >= total + outage + after
        }
        try Self.checkStore(h, reports: total + outage + after, "after node B stopped")
        #expect(Self.jobsDone(nodeA.log) == doneAtStop.a + after)
        #expect(Self.jobsDone(nodeB.log) == doneAtStop.b)

        // No 5xx but node B's 503s while its database was away (the one asked directly, and
        // those nginx passed on to A); nginx answered no client 5xx.
        #expect(Self.serverErrors(nodeA.log).isEmpty, "node A: \(Self.serverErrors(nodeA.log).prefix(10))")
        let errorsB = Self.serverErrors(nodeB.log)
        #expect(errorsB.allSatisfy { $0.contains("status=503") }, "node B: \(errorsB.prefix(10))")
        #expect(errorsB.count >= 2, "node B: \(errorsB)")
        for (name, log) in [("A", nodeA.log), ("B", nodeB.log)] {
            #expect(!log.contains("lease lost"), "node \(name): \(log.suffix(2000))")
        }
        #expect(!nginx.accessLog.contains { $0.range(of: #" 5\d\d upstream="#, options: .regularExpression) != nil },
                "\(nginx.accessLog.filter { $0.range(of: #" 5\d\d upstream="#, options: .regularExpression) != nil }.prefix(10))")

        print("""
            MultiNodeTests: \(count) uploads through nginx in \(String(format: "%.1f", postSeconds)) s; \
            processed in \(String(format: "%.1f", processSeconds)) s after; jobs done A \(doneA), B \(doneB); \
            groups \(groupCount); whole test \(String(format: "%.1f", Date().timeIntervalSince(started))) s
            """)
    }
}
