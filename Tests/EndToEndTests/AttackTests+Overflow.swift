import Foundation
import TestSupport
import Testing

/// F1: one report whose numbers overflow a sum trapped the parser inside `serve`, and the whole
/// server died (API, master and alerts). F2: a lag report whose root counts sum past Int.max was
/// stored, and its report and group pages trapped every time they were opened. Now such numbers
/// are refused where they are parsed, with the field and the limit in the reason, at every door:
/// `/api/v1/reports`, an SDK `appLag` record on `/api/v1/ingest`, and `/api/v1/symbolicate`.
extension AttackTests {
    /// The review's inputs and variants of our own, each with the reason it must be refused
    /// with (built from the numbers put into it and the documented limits).
    static var overflowingReports: [(name: String, body: Data, reason: String)] {
        let intMax = "9223372036854775807"
        let metricKitRoot = #"{"binaryUUID": "34769225-FA99-307E-9530-549AE6C3EC6F", "binaryName": "Demo", "offsetIntoBinaryTextSegment": OFFSET, "sampleCount": COUNT}"#
        func metricKit(_ roots: [(offset: String, count: String)]) -> Data {
            let frames = roots.map { metricKitRoot.replacingOccurrences(of: "OFFSET", with: $0.offset).replacingOccurrences(of: "COUNT", with: $0.count) }
            return Data("""
                {"timeStampBegin": "2024-05-01 10:00:00", "hangDiagnostics": [{"callStackTree": {"callStackPerThread": true,
                  "callStacks": [{"threadAttributed": true, "callStackRootFrames": [\(frames.joined(separator: ","))]}]},
                  "diagnosticMetaData": {"hangDuration": "2 sec", "bundleIdentifier": "com.example.demo"}}]}
                """.utf8)
        }
        let ksProfile = Data("""
            {"report": {"process_name": "MyApp"}, "system": {"CFBundleExecutable": "MyApp"},
             "crash": {"error": {"type": "profile", "profile": {
               "frames": [{"instruction_addr": 4377604587, "object_name": "MyApp", "object_addr": 4377493504}],
               "threads": [{"primary": true, "samples": [{"count": 3, "frames": [0]}, {"count": \(intMax), "frames": [0]}]}]}}}}
            """.utf8)
        func lag(_ nodes: [(depth: Int, count: String)]) -> Data {
            let profile = nodes.map { #"{"depth": \#($0.depth), "count": \#($0.count), "costTime": 10, "methodAddress": "0x104d08100"}"# }
            return Data("""
                {"type": "lag", "dyld_images": [{"name": "/x/Demo", "uuid": "8F528C10-3E80-3DD6-B0BE-5D558F64F7AB", "base_addr": "0x104d00000"}],
                 "thread_profile": [\(profile.joined(separator: ","))]}
                """.utf8)
        }
        let limit = 1 << 40  // ReportLimits.maxProfileSamples, as docs/formats.md states it
        return [
            ("F1 MetricKit roots past Int.max", metricKit([("100", intMax), ("200", intMax)]),
             "sampleCount \(intMax) brings the hang's samples past the limit of \(limit)"),
            ("MetricKit roots that fit alone", metricKit([("100", "\(limit / 2)"), ("200", "\(limit / 2 + 1)")]),
             "sampleCount \(limit / 2 + 1) brings the hang's samples past the limit of \(limit)"),
            ("MetricKit offset 2^64-1", metricKit([("18446744073709551615", "1")]),
             "offsetIntoBinaryTextSegment 18446744073709551615 leaves no room for the image in 64 bits"),
            ("F1 KSCrash profile count Int.max", ksProfile, "profile sample 1: count \(intMax) brings the samples"),
            ("F2 SDK lag roots past Int.max", lag([(0, intMax), (0, intMax)]),
             "thread_profile[0]: count \(intMax) brings the tree's samples past the limit of \(limit)"),
            ("SDK lag children past Int.max", lag([(0, "1"), (1, intMax), (1, intMax)]),
             "thread_profile[1]: count \(intMax) brings the tree's samples past the limit of \(limit)"),
        ]
    }

    @Test func overflowingCountsAreRefusedAtEveryDoor() throws {
        let h = try Harness()
        #expect(try h.stackline(["namespaces", "set-key", "prism"]).status == 0)
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let server = try h.startServer(["--workers", "0"])
        let reports = Self.overflowingReports

        for (name, body, reason) in reports {
            let posted = try server.curl("POST", "/api/v1/reports", token: ingest, body: body)
            #expect((400..<500).contains(posted.status), "\(name): /api/v1/reports \(posted)")
            #expect(posted.text.contains(reason), "\(name): /api/v1/reports \(posted)")
            #expect(Self.healthy(server), "\(name): the server died at /api/v1/reports")

            let symbolicated = try server.curl("POST", "/api/v1/symbolicate", token: read, body: body)
            #expect((400..<500).contains(symbolicated.status), "\(name): /api/v1/symbolicate \(symbolicated)")
            #expect(symbolicated.text.contains(reason), "\(name): /api/v1/symbolicate \(symbolicated)")
            #expect(Self.healthy(server), "\(name): the server died at /api/v1/symbolicate")
        }

        // All of them as the SDK's hang records in one batch: each refused with its reason.
        let batch = try sdkBatch(try reports.enumerated().map { i, report in
            sdkRecord("overflow-\(i)", type: "appLag", namespace: "prism", payload: try sdkPayload(report.body))
        })
        let answer = try server.curl("POST", "/api/v1/ingest", token: ingest, body: batch)
        let records = try #require(answer.json?["records"] as? [[String: Any]], "\(answer)")
        #expect(records.count == reports.count)
        for (record, report) in zip(records, reports) {
            #expect(record["status"] as? String == "refused", "\(report.name): \(record)")
            #expect((record["reason"] as? String)?.contains(report.reason) == true, "\(report.name): \(record)")
        }
        #expect(Self.healthy(server), "the server died at /api/v1/ingest")
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM reports") == 0)
    }

    /// F2's pages still work for an ordinary hang: the report page with its flame graph, and the
    /// group page every `new_group` alert links to.
    @Test func anOrdinaryHangsPagesRender() throws {
        let h = try Harness()
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let server = try h.startServer(["--workers", "1"])
        let example = try Data(contentsOf: URL(fileURLWithPath: TestPaths.packageRoot + "/Tests/Fixtures/fuzz-seeds/sdk-lag/documented-example.json"))
        let posted = try server.curl("POST", "/api/v1/reports", token: ingest, body: example)
        let id = try #require(posted.json?["id"] as? Int, "\(posted)")
        try h.waitUntil("the hang to be symbolicated", timeout: 120) {
            try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state = 'done'") == 1
        }
        let fingerprint = try #require((try reportJSON(h, Int64(id))["group"] as? [String: Any])?["fingerprint"] as? String)

        let page = try server.curl("GET", "/reports/\(id)", token: read)
        #expect(page.status == 200, "\(page)")
        // The example's tree: a root of 30 samples over two children (29 and 1).
        #expect(page.text.contains("data-k=\"flame\" data-source=\"profile\" data-total=\"30\""), "\(page)")
        #expect(page.text.contains("data-count=\"29\"") && page.text.contains("data-count=\"1\""))
        let group = try server.curl("GET", "/groups/\(fingerprint)", token: read)
        #expect(group.status == 200, "\(group)")
        #expect(Self.healthy(server))
    }
}
