import Foundation
import Storage
import TestSupport
import Testing

@testable import Server

/// A payload as the SDK makes it, by independent tools: gzip, then base64 (docs/sdk-protocol.md).
func sdkPayload(_ report: Data) throws -> String { try gzipped(report).base64EncodedString() }

/// One SDK record (docs/sdk-protocol.md), built as plain JSON objects.
func sdkRecord(_ reportId: String, type: String, namespace: String, payload: String? = nil) -> [String: Any] {
    var record: [String: Any] = [
        "report_id": reportId, "monitor_type": type, "namespace": namespace, "created_time": 1_700_000_000_123,
        "meta": ["app_name": "SDKApp", "app_version": "2.1.0", "session_id": "s-1", "device_model": "iPhone14,2"], "is_biz": false,
    ]
    if let payload { record["payload"] = payload }
    return record
}

func sdkBatch(_ records: [[String: Any]]) throws -> Data {
    try JSONSerialization.data(withJSONObject: ["records": records])
}

/// `POST /api/v1/ingest` and `GET /api/v1/config` in process: per-record answers, namespaced
/// tokens, whole-batch refusals and the remote configuration.
extension ServerRouteTests {
    @Suite struct SDKRouteTests {
        /// Per-record answers of a batch upload, by index.
        func outcomes(_ answer: RouteAnswer) throws -> [[String: Any]] {
            let records = try #require(answer.json?["records"] as? [[String: Any]], "\(answer)")
            #expect(records.map { $0["index"] as? Int } == Array(0..<records.count).map { $0 })
            return records
        }

        @Test func aNamespacedTokenUploadsAndReadsOnlyItsNamespace() async throws {
            let h = try RouteHarness()
            try h.db.setNamespaceConfiguration(
                "prism",
                json: #"{"url": "https://collector.example/api/v1/ingest", "maxItem": 50, "periodicTimerSecond": 10, "monitorList": [{"type": "appCrash", "isRealtime": true, "isUploadPayload": true}]}"#)
            try h.db.setNamespaceConfiguration("other", json: "{}")
            let prismToken = try h.token(.ingest, namespace: "prism")
            let ingest = try h.token(.ingest)
            let read = try h.token(.read)
            let reports = try (0..<2).map { try appleCrash(100 + $0) }
            let batch = try sdkBatch([
                sdkRecord("a", type: "appCrash", namespace: "other", payload: try sdkPayload(reports[0])),
                sdkRecord("b", type: "appCrash", namespace: "prism", payload: try sdkPayload(reports[1])),
            ])
            let bomb = try sdkBatch([
                sdkRecord("bomb", type: "appCrash", namespace: "prism", payload: try sdkPayload(Data(count: 50_000_000))),
                sdkRecord("c", type: "appCrash", namespace: "prism", payload: try sdkPayload(try appleCrash(109))),
            ])
            let many = try sdkBatch(Array(repeating: sdkRecord("n", type: "net", namespace: "other"), count: 1001))
            let raw = try appleCrash(107)
            try await h.withRouter(ServerLimits(maxReportBytes: 1_000_000)) { client in
                let answer = try await client.send(.post, "/api/v1/ingest", token: prismToken, body: batch)
                #expect(answer.status == 200, "\(answer)")
                let out = try outcomes(answer)
                #expect(out.map { $0["status"] as? String } == ["refused", "accepted"], "\(answer)")
                #expect((out[0]["reason"] as? String)?.contains("only upload into namespace 'prism'") == true)
                #expect(try sqlite(h.dbPath, "SELECT namespace FROM reports").map { $0["namespace"] as? String } == ["prism"])

                // A raw report through POST /api/v1/reports with the namespaced token is tagged too.
                let rawAnswer = try await client.send(.post, "/api/v1/reports", token: prismToken, body: raw)
                let rawId = try #require(rawAnswer.json?["id"] as? Int, "\(rawAnswer)")
                #expect(try sqlite(h.dbPath, "SELECT namespace FROM reports WHERE id = \(rawId)").first?["namespace"] as? String == "prism")

                // A gzip bomb in a payload is refused as `submit` refuses one, its neighbour stored.
                let bombed = try outcomes(try await client.send(.post, "/api/v1/ingest", token: prismToken, body: bomb))
                #expect(bombed.map { $0["status"] as? String } == ["refused", "accepted"])
                #expect((bombed[0]["reason"] as? String)?.contains("1000000") == true, "\(bombed[0])")

                // Whole-batch refusals: not JSON, not a batch, too many records, no token, the wrong scope.
                let tooMany = try await client.send(.post, "/api/v1/ingest", token: ingest, body: many)
                #expect(tooMany.status == 400)
                #expect(tooMany.error?.contains("1001 records") == true, "\(tooMany)")
                let junk = try await client.send(.post, "/api/v1/ingest", token: ingest, body: Data("{records: nope".utf8))
                #expect(junk.status == 400)
                #expect(junk.error != nil)
                #expect(try await client.send(.post, "/api/v1/ingest", token: ingest, body: Data(#"[1, 2]"#.utf8)).status == 400)
                #expect(try await client.send(.post, "/api/v1/ingest", body: batch).status == 401)
                #expect(try await client.send(.post, "/api/v1/ingest", token: read, body: batch).status == 403)

                // Remote configuration: what was configured, defaults for the rest (docs/sdk-protocol.md),
                // in the design's {namespace: configuration} shape.
                let served = try await client.send(.get, "/api/v1/config?namespace=prism", token: prismToken)
                #expect(served.status == 200, "\(served)")
                let prism = try #require(served.json?["prism"] as? [String: Any], "\(served)")
                #expect(prism["url"] as? String == "https://collector.example/api/v1/ingest")
                #expect(prism["maxItem"] as? Int == 50)
                #expect(prism["periodicTimerSecond"] as? Int == 10)
                #expect(prism["maxBodyMByte"] as? Int == 1)
                #expect(prism["expirationDay"] as? Int == 15)
                #expect(prism["isUpload"] as? Bool == true)
                #expect((prism["monitorList"] as? [[String: Any]])?.map { $0["type"] as? String } == ["appCrash"])
                // No url configured: this server's ingest URL as the client reached it (RouteClient
                // names its authority `localhost`, over http).
                let other = try await client.send(.get, "/api/v1/config?namespace=other", token: ingest)
                let otherConfig = try #require(other.json?["other"] as? [String: Any], "\(other)")
                #expect(otherConfig["url"] as? String == "http://localhost/api/v1/ingest")
                #expect((otherConfig["monitorList"] as? [Any])?.count == 5)
                #expect(try await client.send(.get, "/api/v1/config?namespace=other", token: prismToken).status == 403)
                #expect(try await client.send(.get, "/api/v1/config?namespace=nowhere", token: ingest).status == 404)
                #expect(try await client.send(.get, "/api/v1/config", token: ingest).status == 400)
                #expect(try await client.send(.get, "/api/v1/config?namespace=b%20d", token: ingest).status == 400)
                #expect(try await client.send(.get, "/api/v1/config?namespace=prism", token: read).status == 403)
                #expect(try await client.send(.get, "/api/v1/config?namespace=prism").status == 401)
            }
        }

        /// docs/sdk-protocol.md is exact: its example batch is accepted as it says, and its payloads
        /// are the reports it prints.
        @Test func theDocumentedExampleBatchIsAcceptedAsDocumented() async throws {
            let doc = try String(contentsOfFile: packageRoot + "/docs/sdk-protocol.md", encoding: .utf8)
            let batch = try fencedBlock(after: "<!-- sdk-protocol example batch", in: doc)
            let crash = try fencedBlock(after: "The first payload is this minimal Apple crash report", in: doc)
            let lag = try fencedBlock(after: "The second is this lag report", in: doc)

            let h = try RouteHarness()
            try h.db.setNamespaceKey("prism", key: Data((0..<16).map { UInt8($0) }))
            let token = try h.token(.ingest, namespace: "prism")
            try await h.withRouter { client in
                let answer = try await client.send(.post, "/api/v1/ingest", token: token, body: Data(batch.utf8))
                #expect(answer.status == 200, "\(answer)")
                let records = try #require(answer.json?["records"] as? [[String: Any]], "\(answer)")
                #expect(records.map { $0["status"] as? String } == ["accepted", "accepted", "dropped"], "\(answer)")
                #expect(records.map { ($0["formats"] as? [String])?.first } == ["apple-crash", "sdk-lag", nil])
                // The stored bytes are the printed reports (sha256sum of the document's text).
                let ids = records.compactMap { ($0["ids"] as? [Int])?.first }
                #expect(ids.count == 2)
                for (id, text) in zip(ids, [crash, lag]) {
                    let digest = try #require(try sqlite(h.dbPath, "SELECT digest FROM reports WHERE id = \(id)").first?["digest"] as? String)
                    #expect(digest == (try sha256sum(Data(text.utf8))), "report \(id)")
                }
            }
        }
    }
}
