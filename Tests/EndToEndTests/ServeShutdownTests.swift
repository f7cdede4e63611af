import Foundation
import TestSupport
import Testing

/// SIGTERM during a load run loses nothing: every report answered with 2xx is in the database
/// exactly once after a restart, and every stored report is processed once.
@Suite(.serialized) struct ServeShutdownTests {
    /// One upload of the load run: the body's file and what the server answered.
    struct Upload: Sendable {
        var path: String
        var status: Int
        var id: Int?
    }

    final class Uploads: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [Upload] = []
        func add(_ u: Upload) { lock.withLock { items.append(u) } }
        var all: [Upload] { lock.withLock { items } }
    }

    @Test func noAcknowledgedReportIsLostOrStoredTwiceAcrossSIGTERM() throws {
        let h = try Harness()
        let token = try h.token("ingest")
        let server = try h.startServer(["--workers", "2", "--ingest-rate", "0", "--drain", "10"])
        let base = try CrashFixture.shared.report(symbolicate: "off")
        let clients = 4, perClient = 150
        var paths: [[String]] = []
        for c in 0..<clients {
            paths.append(try h.write((0..<perClient).map { variant(of: base, number: c * perClient + $0) }, subdir: "load-\(c)"))
        }
        let uploads = Uploads()
        let group = DispatchGroup()
        let url = server.baseURL + "/api/v1/reports"
        for c in 0..<clients {
            group.enter()
            Thread { [paths] in
                defer { group.leave() }
                for path in paths[c] {
                    // Real curl, one connection per report, as an SDK posting crashes would.
                    let answer = try? HTTPAnswer.curl(
                        "POST", url, token: token, body: FileManager.default.contents(atPath: path), extra: ["--max-time", "30"])
                    uploads.add(Upload(path: path, status: answer?.status ?? 0, id: answer?.json?["id"] as? Int))
                }
            }.start()
        }
        // SIGTERM once the load is well under way.
        try h.waitUntil("the load to start", timeout: 120) { uploads.all.filter { $0.status == 202 }.count >= 100 }
        server.signal(SIGTERM)
        #expect(try server.waitForExit() == 0, "serve did not exit cleanly: \(server.log.suffix(2000))")
        group.wait()

        let all = uploads.all
        let acknowledged = all.filter { (200..<300).contains($0.status) }
        #expect(acknowledged.count >= 100)
        #expect(acknowledged.count < clients * perClient, "the shutdown came after the whole load; nothing was tested")
        #expect(acknowledged.allSatisfy { $0.id != nil })

        // Restart: everything stored gets processed exactly once.
        let again = try h.startServer(["--workers", "2"], log: "serve-restart")
        try h.waitUntil("every stored report to be processed", timeout: 300) {
            try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')") == 0
        }
        again.signal(SIGTERM)
        #expect(try again.waitForExit() == 0)

        // The oracle: sha256sum of each acknowledged body, and plain SQL.
        let sums = try runChecked("sha256sum", acknowledged.map(\.path)).stdout
        var digestOf: [String: String] = [:]
        for line in sums.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            digestOf[String(parts[1]).trimmingCharacters(in: CharacterSet(charactersIn: " *"))] = String(parts[0])
        }
        let rows = try sqlite(h.dbPath, "SELECT id, digest FROM reports")
        var idsByDigest: [String: [Int]] = [:]
        for row in rows { idsByDigest[row["digest"] as! String, default: []].append(row["id"] as! Int) }
        for upload in acknowledged {
            let digest = try #require(digestOf[upload.path])
            #expect(idsByDigest[digest] == [upload.id!], "\(upload.path): acknowledged as \(upload.id!), stored as \(idsByDigest[digest] ?? [])")
        }
        #expect(rows.count >= acknowledged.count)
        #expect(try sqlite(h.dbPath, "SELECT report_id FROM jobs GROUP BY report_id HAVING COUNT(*) != 1").isEmpty)
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state = 'done'") == rows.count)
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM results") == rows.count)
    }
}
