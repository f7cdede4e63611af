import Foundation
import TestSupport
import Testing

/// Issue 33's chaos run, at the size `make test` can afford: two `serve` nodes on one PostgreSQL
/// database behind nginx (the shipped example), each with a local worker, plus a remote worker
/// (`stackline-worker --connect`) on node B; reports posted by 4 clients that retry as an SDK
/// does; one node is SIGKILLed mid-load and started again, and later PostgreSQL itself restarts
/// mid-load. Every report answered 202 is stored and processed exactly once, none fails, every
/// group's count is its results', and each new group raised exactly one alert. Then the same
/// bodies go to a twin, one `serve` on SQLite that nothing disturbs (`checkTwin`), which must hold
/// what the chaos database holds and answer as its PostgreSQL copy does.
/// `STACKLINE_CHAOS_REPORTS` sets the number of reports (600; the issue's full run is 5,000).
@Suite(.serialized) struct ChaosTests {
    @Test func aNodeAndThenTheDatabaseDieUnderLoadAndEveryAcceptedReportIsProcessedOnce() throws {
        // A cluster of this test's own: it is restarted under load.
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let h = try Harness(backend: .postgres, database: try cluster.makeDatabase())
        let ingest = try h.token("ingest")
        let (receiver, rulesPath) = try MultiNodeTests.newGroupAlerts(h)
        defer { withExtendedLifetime(receiver) {} }  // it answers the deliveries until the end
        // Short leases, so the killed node's jobs come back within the test.
        let arguments = ["--workers", "1", "--max-connections-per-address", "0", "--alerts", rulesPath, "--lease", "3"]
        let first = try h.startServer(arguments, log: "chaos-a")
        let nodeB = try h.startServer(arguments, log: "chaos-b")
        let portA = first.port
        let nodeA = Locked<ServerProcess>(first)
        defer {
            if nodeA.value.process.isRunning { nodeA.value.signal(SIGKILL) }
            if nodeB.process.isRunning { nodeB.signal(SIGKILL) }
        }
        let nginx = try NginxProxy(nodes: [portA, nodeB.port], dir: h.dir.file("nginx"))
        defer { nginx.stop() }
        // The remote worker: on node B, which stays up (a worker is known to the node it connected to).
        let remote = try h.startConnectedWorker(
            nodeB.baseURL, token: try h.token("worker"), name: "chaos-remote", cache: h.dir.file("remote-cache"))
        defer { if remote.isRunning { kill(remote.processIdentifier, SIGKILL) } }

        // Variants of one crash (one group), each report distinct.
        let count = Int(ProcessInfo.processInfo.environment["STACKLINE_CHAOS_REPORTS"] ?? "") ?? 600
        let crash = try CrashFixture.shared.report(symbolicate: "off")
        let bodies = (0..<count).map { variant(of: crash, number: $0) }
        let accepted = Locked<[Int: Int]>([:])
        let failures = Locked<[String]>([])
        let answered = Locked<Int>(0)
        let proxyURL = nginx.baseURL
        let clients = DispatchGroup()
        DispatchQueue.global().async(group: clients) {
            DispatchQueue.concurrentPerform(iterations: 4) { client in
                for i in stride(from: client, to: count, by: 4) {
                    // An SDK keeps a report until it is acknowledged and sends it again: a
                    // refused connection or a 5xx from a node (or both) while one is down.
                    var last = ""
                    for _ in 0..<400 {
                        if let answer = try? HTTPAnswer.curl("POST", proxyURL + "/api/v1/reports", token: ingest, body: bodies[i]) {
                            if answer.status == 202, let id = answer.json?["id"] as? Int {
                                accepted.mutate { $0[i] = id }
                                break
                            }
                            last = "\(answer)"
                            if !(500...599).contains(answer.status) { break }
                        }
                        Thread.sleep(forTimeInterval: 0.1)
                    }
                    if accepted.value[i] == nil { failures.mutate { $0.append("report \(i): \(last)") } }
                    answered.mutate { $0 += 1 }
                }
            }
        }
        func waitForAnswers(_ n: Int) throws {
            try h.waitUntil("\(n) uploads answered", timeout: 600) { answered.value >= n }
        }

        // A third of the way: node A dies without a word, and comes back on its port.
        try waitForAnswers(count / 3)
        nodeA.value.signal(SIGKILL)
        _ = try nodeA.value.waitForExit()
        let again = try h.startServer(arguments + ["--listen", "127.0.0.1:\(portA)"], log: "chaos-a-again")
        nodeA.mutate { $0 = again }
        // Two thirds: PostgreSQL crashes (immediate stop) and starts again.
        try waitForAnswers(2 * count / 3)
        try cluster.restart()
        #expect(clients.wait(timeout: .now() + 900) == .success, "the clients did not finish")
        #expect(failures.value.isEmpty, "\(failures.value.prefix(5))")
        #expect(accepted.value.count == count)
        #expect(Set(accepted.value.values).count == count, "two uploads answered the same id")

        try h.waitUntil("every report to be processed", timeout: 600) {
            (try? h.sqlInt("SELECT COUNT(*) FROM jobs WHERE state IN ('done', 'failed')")) ?? 0 >= count
        }
        // Stored once each, processed once each (a job the killed node held ran again after its
        // lease, and its result replaced nothing: one result per report), none failed.
        #expect(try h.sqlInt("SELECT COUNT(*) FROM reports") == count)
        #expect(try h.sqlInt("SELECT COUNT(DISTINCT digest) FROM reports") == count)
        #expect(try h.sqlInt("SELECT COUNT(*) FROM jobs") == count)
        #expect(try h.sqlInt("SELECT COUNT(*) FROM jobs WHERE state <> 'done'") == 0,
                "\(String(describing: try? h.sql("SELECT id, state, attempts, last_error FROM jobs WHERE state <> 'done' LIMIT 5")))")
        #expect(try h.sqlInt("SELECT COUNT(*) FROM results") == count)
        #expect(try h.sqlInt("SELECT COUNT(*) FROM reports r WHERE NOT EXISTS (SELECT 1 FROM results s WHERE s.report_id = r.id)") == 0)
        for group in try h.sql("SELECT g.fingerprint, g.count, (SELECT COUNT(*) FROM results s WHERE s.fingerprint = g.fingerprint) AS n FROM groups g") {
            #expect(group["count"] as? Int == group["n"] as? Int, "\(group)")
        }
        let checked = try h.stackline(["db", "check"])
        #expect(checked.status == 0 && checked.stdout.hasSuffix("ok\n"), "\(checked.stdout)")

        // Exactly one new_group event per group, once the rules have passed every result.
        try h.waitUntil("the alert rules to pass every result", timeout: 300) {
            let cursor = (try? h.sqlInt("SELECT COALESCE(MAX(value), 0) FROM alert_cursors")) ?? 0
            let last = (try? h.sqlInt("SELECT COALESCE(MAX(position), 0) FROM results")) ?? -1
            return cursor >= last
        }
        let groups = try h.sqlInt("SELECT COUNT(*) FROM groups")
        #expect(groups >= 1)
        #expect(try h.sqlInt("SELECT COUNT(*) FROM alert_events WHERE kind = 'new_group'") == groups)
        #expect(try h.sqlInt("SELECT COUNT(DISTINCT fingerprint) FROM alert_events WHERE kind = 'new_group'") == groups)
        #expect(nodeB.process.isRunning && nodeA.value.process.isRunning)
        // The remote worker took its share (its count reaches the roster with its heartbeats).
        try h.waitUntil("the remote worker's jobs in the roster", timeout: 60) {
            (try? h.sqlInt("SELECT COALESCE(SUM(jobs_done), 0) FROM workers WHERE name = 'chaos-remote'")) ?? 0 > 0
        }
        #expect(remote.isRunning, "the remote worker rode out the database's restart")

        try checkTwin(of: bodies, against: h)
    }
}

extension ChaosTests {
    /// Issue 33's twin of the chaos run: the same bodies posted over HTTP to one `serve` on SQLite
    /// that nothing disturbs. A report the chaos run lost or counted twice would be copied
    /// faithfully by `db copy` and answered alike by both backends; only an undisturbed run of the
    /// same input shows it, so the twin must hold what the chaos database `chaos` holds, but for
    /// ids and times. Then its file is copied into PostgreSQL, and the copy must answer as the file.
    func checkTwin(of bodies: [Data], against chaos: Harness) throws {
        // Symbols as the chaos run's: none added, so both symbolicate alike.
        let twin = try Harness()
        // A file a body: what curl sends and sha256sum reads.
        let paths = try twin.write(bodies, subdir: "bodies")
        let ingest = try twin.token("ingest")
        // Nothing here fails on purpose, so every body must be taken at its first try: no rate
        // limit to wait out.
        let server = try twin.startServer(["--workers", "1", "--ingest-rate", "0"], log: "twin")
        let answered = try HTTPAnswer.postEach(server.baseURL + "/api/v1/reports", token: ingest, paths: paths)
        #expect(answered == Array(repeating: 202, count: bodies.count), "\(answered.enumerated().filter { $0.element != 202 }.prefix(5))")
        try twin.waitUntil("the twin's reports to be processed", timeout: 600) {
            (try? twin.sqlInt("SELECT COUNT(*) FROM jobs WHERE state IN ('done', 'failed')")) ?? 0 >= bodies.count
        }
        #expect(try twin.sqlInt("SELECT COUNT(*) FROM jobs WHERE state <> 'done'") == 0)
        // Stopped, so that nothing writes between the copy and the counts taken after it.
        server.signal(SIGTERM)
        #expect(try server.waitForExit() == 0, "\(server.log.suffix(2_000))")

        // Report by report, by digest (what sha256sum makes of each body sent): the same group in
        // both; and the same groups with the same counts.
        let sums = try runProcess("sha256sum", paths)
        let sent = sums.stdout.split(separator: "\n").map { String($0.prefix(64)) }.sorted()
        #expect(sent.count == bodies.count && Set(sent).count == bodies.count, "\(sums.stderr)")
        func grouped(_ h: Harness) throws -> [String] {
            try h.sql("SELECT r.digest, s.fingerprint FROM reports r JOIN results s ON s.report_id = r.id").map {
                "\($0["digest"] as? String ?? "?") \($0["fingerprint"] as? String ?? "?")"
            }.sorted()
        }
        func ledger(_ h: Harness) throws -> [String: Int] {
            let rows = try h.sql("SELECT fingerprint, count FROM groups")
            return Dictionary(rows.map { ($0["fingerprint"] as? String ?? "?", $0["count"] as? Int ?? -1) }) { _, _ in -1 }
        }
        // Compared whole, but only the differences printed: a list has a line a report.
        func expectSame(_ a: [String], _ b: [String], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let same = a == b
            let onlyA = Set(a).subtracting(b).sorted().prefix(3), onlyB = Set(b).subtracting(a).sorted().prefix(3)
            #expect(
                same, "\(what): \(a.count) and \(b.count) lines, only in the first \(onlyA), only in the second \(onlyB)",
                sourceLocation: sourceLocation)
        }
        let twinReports = try grouped(twin)
        expectSame(twinReports.map { String($0.prefix(64)) }, sent, "the twin's reports and the bodies sent")
        expectSame(twinReports, try grouped(chaos), "the twin's reports and groups and the chaos run's")
        let groups = try ledger(twin), chaosGroups = try ledger(chaos)
        #expect(groups == chaosGroups)

        // The file and its copy: the same answers, byte for byte.
        let url = try PostgresCluster.shared.get().makeDatabase()
        try twin.copyToPostgres(url, tables: ["reports", "jobs", "results", "groups", "group_versions", "tokens"])
        try twin.expectSameAnswer(["groups", "--json"], copy: url)
        let fingerprints = try twin.groupFingerprints()
        #expect(fingerprints.sorted() == groups.keys.sorted(), "\(fingerprints)")
        for fingerprint in fingerprints { try twin.expectSameAnswer(["group", fingerprint, "--json"], copy: url) }
        // Every report's answer twice would be most of the twin's time: 50 spread evenly over the
        // ids, and the first and the last.
        let ids = try twin.sql("SELECT id FROM reports ORDER BY id").compactMap { $0["id"] as? Int }
        #expect(ids.count == bodies.count)
        let step = max(1, ids.count / 50)
        let sample = Set(stride(from: step / 2, to: ids.count, by: step).map { ids[$0] } + ids.prefix(1) + ids.suffix(1)).sorted()
        for id in sample { try twin.expectSameAnswer(["report", "\(id)", "--json"], copy: url) }
        try twin.expectSameAnswer(["releases", "--json"], copy: url)
    }
}
