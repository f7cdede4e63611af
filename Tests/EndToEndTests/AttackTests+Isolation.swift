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
