import Foundation
import TestSupport
import Testing

/// Issue 33's chaos run, at the size `make test` can afford: two `serve` nodes on one PostgreSQL
/// database behind nginx (the shipped example), each with a local worker, plus a remote worker
/// (`stackline-worker --connect`) on node B; reports posted by 4 clients that retry as an SDK
/// does; one node is SIGKILLed mid-load and started again, and later PostgreSQL itself restarts
/// mid-load. Every report answered 202 is stored and processed exactly once, none fails, every
/// group's count is its results', and each new group raised exactly one alert.
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

        // Reports of two crashes (two groups), all distinct.
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
    }
}
