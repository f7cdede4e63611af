import Foundation
import TestSupport
import Testing

/// `serve` on PostgreSQL when the database server goes away and comes back (issue 33 §2): the
/// node stops answering ready, refuses ingest with a 503 the client can retry, keeps running,
/// and takes up ingest and processing again by itself when the server returns.
@Suite(.serialized) struct DatabaseOutageTests {
    @Test func aNodeThatLosesPostgreSQLIsNotReadyUntilItReturnsThenIngestsAndProcessesAgain() throws {
        // A cluster of this test's own: stopping the shared one would cut every other test off.
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let h = try Harness(backend: .postgres, database: try cluster.makeDatabase())
        let token = try h.token("admin")
        let server = try h.startServer(["--workers", "1"])
        let report = try CrashFixture.shared.report(symbolicate: "off")

        func ready() throws -> HTTPAnswer { try server.curl("GET", "/readyz") }
        func databaseCheck(_ answer: HTTPAnswer) -> String? { (answer.json?["checks"] as? [String: Any])?["database"] as? String }
        func post(_ n: Int) throws -> HTTPAnswer {
            try server.curl("POST", "/api/v1/reports", token: token, body: variant(of: report, number: n))
        }
        func processed(_ id: Int) throws -> Bool {
            try h.sqlInt("SELECT COUNT(*) FROM jobs WHERE report_id = \(id) AND state = 'done'") == 1
        }

        // Ready once its local worker has connected (until then readyz names the workers).
        try h.waitUntil("readyz before the outage", timeout: 60) {
            let answer = try ready()
            return answer.status == 200 && databaseCheck(answer) == "ok"
        }
        let first = try post(1)
        #expect(first.status == 202, "\(first)")
        let firstId = try #require(first.json?["id"] as? Int)
        try h.waitUntil("the first report to be processed") { try processed(firstId) }

        try cluster.stopServer()
        // Not ready, with the database named as the reason, while the server is away.
        try h.waitUntil("readyz to report the database", timeout: 60) {
            let answer = try ready()
            return answer.status == 503 && databaseCheck(answer) != "ok"
        }
        let refused = try post(2)
        #expect(refused.status == 503, "\(refused)")
        #expect(refused.headers["retry-after"] != nil, "\(refused.headers)")
        #expect(server.process.isRunning)

        try cluster.startServer()
        try h.waitUntil("readyz to recover", timeout: 60) {
            let answer = try ready()
            return answer.status == 200 && databaseCheck(answer) == "ok"
        }
        // The retried upload is stored and processed: the master's slot came back by itself.
        let retried = try post(2)
        #expect(retried.status == 202, "\(retried)")
        let retriedId = try #require(retried.json?["id"] as? Int)
        try h.waitUntil("the report posted after the outage to be processed") { try processed(retriedId) }
        #expect(try h.sqlInt("SELECT COUNT(*) FROM reports") == 2)
        #expect(server.process.isRunning)
        #expect(!server.log.contains("worker slot stopped"), "\(server.log.suffix(3000))")
    }
}
