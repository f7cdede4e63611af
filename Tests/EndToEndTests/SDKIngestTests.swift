import Foundation
import ReportModel
import TestSupport
import Testing

/// A payload as the SDK makes it, made by independent tools: gzip, then (optionally) openssl's
/// AES-CBC with a random IV written in front of the ciphertext, then base64.
func sdkPayload(_ report: Data, keyHex: String? = nil, cipher: String = "aes-128-cbc") throws -> String {
    let gz = try gzipped(report)
    guard let keyHex else { return gz.base64EncodedString() }
    let iv = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    let dir = try makeTemporaryDirectory(prefix: "enc")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let out = try runProcess("openssl", ["enc", "-\(cipher)", "-K", keyHex, "-iv", iv, "-out", dir + "/sealed"], stdin: gz)
    guard out.status == 0 else { throw TestSupportError("openssl enc failed: \(out.stderr)") }
    let ciphertext = try Data(contentsOf: URL(fileURLWithPath: dir + "/sealed"))
    let ivBytes = Data(stride(from: 0, to: iv.count, by: 2).compactMap { UInt8(iv.dropFirst($0).prefix(2), radix: 16) })
    return (ivBytes + ciphertext).base64EncodedString()
}

/// One SDK record (docs/sdk-protocol.md), built as plain JSON objects.
func sdkRecord(
    _ reportId: String, type: String, namespace: String, payload: String? = nil, encrypted: Bool = false,
    meta: [String: Any] = ["app_name": "SDKApp", "app_version": "2.1.0", "session_id": "s-1", "device_model": "iPhone14,2"]
) -> [String: Any] {
    var record: [String: Any] = [
        "report_id": reportId, "monitor_type": type, "namespace": namespace, "created_time": 1_700_000_000_123,
        "meta": meta, "is_biz": false,
    ]
    if let payload { record["payload"] = payload }
    if encrypted { record["encrypted"] = true }
    return record
}

func sdkBatch(_ records: [[String: Any]]) throws -> Data {
    try JSONSerialization.data(withJSONObject: ["records": records])
}

/// The reporting SDK's side of `stackline serve`: batches of records with encrypted and plain
/// payloads, per-record answers, namespaces, remote configuration.
@Suite(.serialized) struct SDKIngestTests {
    /// Per-record answers of a batch upload, by index.
    func outcomes(_ answer: HTTPAnswer) throws -> [[String: Any]] {
        let records = try #require(answer.json?["records"] as? [[String: Any]], "\(answer)")
        #expect(records.map { $0["index"] as? Int } == Array(0..<records.count).map { $0 })
        return records
    }

    /// On both backends: the whole path (serve, parse children, master, worker, CLI, prune) runs
    /// on PostgreSQL as on SQLite, checked by the same plain SQL through each engine's shell.
    @Test(arguments: Backend.allCases)
    func anSDKBatchBecomesSymbolicatedGroupedReportsTaggedWithTheirNamespaces(_ backend: Backend) throws {
        let h = try Harness(backend: backend)
        let lag = try LagProgram.shared.get()
        #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, try CrashFixture.shared.binary()]).status == 0)
        #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, lag.binary]).status == 0)

        // prism: a generated AES-128 key; other: an AES-256 key we choose.
        let setKey = try h.stackline(["namespaces", "set-key", "prism"])
        #expect(setKey.status == 0, "\(setKey.stderr)")
        let prismKey = setKey.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(prismKey.count == 32)
        #expect(try h.sql("SELECT \(backend == .sqlite ? "lower(hex(aes_key))" : "encode(aes_key, 'hex')") AS k FROM namespaces WHERE name = 'prism'").first?["k"] as? String == prismKey)
        let otherKey = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        #expect(try h.stackline(["namespaces", "set-key", "other", "--key", otherKey]).status == 0)
        let wrongKey = String(repeating: "ab", count: 16)

        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let server = try h.startServer(["--workers", "1"])

        let crash = variant(of: try CrashFixture.shared.report(symbolicate: "off"), number: 1)
        let crash2 = variant(of: try CrashFixture.shared.report(symbolicate: "off"), number: 2)
        let hang = lag.sdkLagReport(load: 0x5555_0000_0000, version: "9.9")
        let records: [[String: Any]] = [
            // 0: a hang, listed first, plain payload: stored after the crashes.
            sdkRecord("hang-1", type: "appLag", namespace: "prism", payload: try sdkPayload(hang)),
            // 1: a network record: acknowledged, counted, dropped.
            sdkRecord("net-1", type: "net", namespace: "prism"),
            // 2: a crash, AES-128-CBC by openssl with the namespace's key.
            sdkRecord("crash-1", type: "appCrash", namespace: "prism", payload: try sdkPayload(crash, keyHex: prismKey), encrypted: true),
            // 3: a bad record among good ones: created_time is not an integer.
            sdkRecord("bad-1", type: "appCrash", namespace: "prism", payload: try sdkPayload(crash2))
                .merging(["created_time": "yesterday"]) { $1 },
            // 4: a payload that is not base64.
            sdkRecord("bad-2", type: "appCrash", namespace: "prism", payload: "%%%not base64%%%"),
            // 5: encrypted with a key that is not the namespace's.
            sdkRecord("bad-3", type: "appCrash", namespace: "prism", payload: try sdkPayload(crash2, keyHex: wrongKey), encrypted: true),
            // 6: a monitor type nobody defined: dropped like the other non-report types.
            sdkRecord("boot-1", type: "appBootTime", namespace: "prism", payload: try sdkPayload(Data("x".utf8))),
            // 7: the same crash report_id again in this batch.
            sdkRecord("crash-1", type: "appCrash", namespace: "prism", payload: try sdkPayload(crash, keyHex: prismKey), encrypted: true),
            // 8: the other namespace, AES-256-CBC.
            sdkRecord("crash-1", type: "appCrash", namespace: "other", payload: try sdkPayload(crash2, keyHex: otherKey, cipher: "aes-256-cbc"), encrypted: true),
            // 9: a namespace nobody created.
            sdkRecord("crash-9", type: "appCrash", namespace: "nowhere", payload: try sdkPayload(crash2)),
        ]
        let answer = try server.curl("POST", "/api/v1/ingest", token: ingest, body: try sdkBatch(records))
        #expect(answer.status == 200, "\(answer)")
        let out = try outcomes(answer)
        #expect(out.map { $0["status"] as? String } == [
            "accepted", "dropped", "accepted", "refused", "refused", "refused", "dropped", "duplicate", "accepted", "refused",
        ], "\(answer)")
        #expect(out.map { $0["report_id"] as? String } == records.map { $0["report_id"] as? String })
        #expect((out[3]["reason"] as? String)?.contains("created_time") == true)
        #expect((out[4]["reason"] as? String)?.contains("base64") == true)
        #expect((out[5]["reason"] as? String)?.contains("decrypted") == true, "\(out[5])")
        #expect((out[9]["reason"] as? String)?.contains("nowhere") == true)
        #expect(answer.json?["accepted"] as? Int == 3)
        #expect(answer.json?["dropped"] as? Int == 2)
        #expect(answer.json?["refused"] as? Int == 4)
        #expect(answer.json?["duplicate"] as? Int == 1)

        func id(_ index: Int) throws -> Int { try #require((out[index]["ids"] as? [Int])?.first, "\(out[index])") }
        let (hangId, crashId, otherId) = (try id(0), try id(2), try id(8))
        #expect(try id(7) == crashId)
        // Crashes first, as the SDK aggregates them: the crash listed after the hang got the lower id.
        #expect(crashId < hangId)
        #expect(otherId < hangId)

        // Plain SQL: the exact bytes (digest by sha256sum) of each report, its namespace, and
        // meta filling only what the report lacks (the backtrace names its app, not its version).
        for (reportId, bytes, namespace) in [(crashId, crash, "prism"), (hangId, hang, "prism"), (otherId, crash2, "other")] {
            let row = try #require(try h.sql("SELECT digest, namespace, app, version FROM reports WHERE id = \(reportId)").first)
            #expect(row["digest"] as? String == (try sha256sum(bytes)))
            #expect(row["namespace"] as? String == namespace)
        }
        let crashRow = try #require(try h.sql("SELECT app, version FROM reports WHERE id = \(crashId)").first)
        #expect(crashRow["app"] as? String == "Demo")
        #expect(crashRow["version"] as? String == "2.1.0")
        #expect(try h.sql("SELECT version FROM reports WHERE id = \(hangId)").first?["version"] as? String == "9.9")
        #expect(try h.sqlInt("SELECT COUNT(*) FROM reports") == 3)
        // The SDK's ids and meta are kept beside the reports.
        let sdk = try h.sql("SELECT namespace, sdk_report_id, report_id, monitor_type, meta FROM sdk_records ORDER BY report_id")
        #expect(sdk.map { "\($0["namespace"]!)/\($0["sdk_report_id"]!)/\($0["report_id"]!)" }
            == ["prism/crash-1/\(crashId)", "other/crash-1/\(otherId)", "prism/hang-1/\(hangId)"])
        #expect((sdk.first?["meta"] as? String)?.contains("\"session_id\":\"s-1\"") == true)

        // Symbolicated and grouped by the real master and worker.
        try h.waitUntil("the SDK reports to be symbolicated", timeout: 180) {
            try h.sqlInt("SELECT COUNT(*) FROM jobs WHERE state = 'done'") == 3
        }
        for reportId in [crashId, hangId, otherId] {
            let result = try #require(try h.sql("SELECT status, fingerprint FROM results WHERE report_id = \(reportId)").first)
            #expect(result["status"] as? String != "unsymbolicated", "report \(reportId): \(result)")
            #expect(result["fingerprint"] is String)
        }
        // The crashed thread's frames in the demo resolve to what the Swift runtime itself names them.
        let printed = try h.stackline(["report", "\(crashId)", "--format", "json"])
        let symbolicated = try JSONDecoder().decode(SymbolicatedReport.self, from: Data(printed.stdout.utf8))
        let ours = Set(symbolicated.threads.first { $0.crashed }?.frames.compactMap { $0.status == .symbolicated ? $0.symbol : nil } ?? [])
        let theirs = try ServeEndToEndTests().oracleSymbols(
            try CrashFixture.shared.report(symbolicate: "full"), image: (try CrashFixture.shared.binary() as NSString).lastPathComponent)
        #expect(!theirs.isEmpty && theirs.isSubset(of: ours), "runtime: \(theirs), ours: \(ours)")

        // Namespace filters: the crash group holds one report of each namespace.
        func groups(_ arguments: [String]) throws -> [[String: Any]] {
            let printed = try h.stackline(["groups", "--json"] + arguments)
            #expect(printed.status == 0, "\(printed.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(printed.stdout.utf8)) as? [[String: Any]])
        }
        let all = try groups([])
        let crashGroup = try #require(all.first { $0["kind"] as? String == "crash" })
        #expect(crashGroup["count"] as? Int == 2)
        let prism = try groups(["--namespace", "prism"])
        #expect(Set(prism.map { "\($0["kind"]!):\($0["count"]!)" }) == ["crash:1", "lag:1"])
        #expect(try groups(["--namespace", "other"]).map { "\($0["kind"]!):\($0["count"]!)" } == ["crash:1"])
        #expect(try groups(["--namespace", "nowhere"]).isEmpty)
        let api = try server.curl("GET", "/api/v1/groups?namespace=prism", token: read)
        let cli = try h.stackline(["groups", "--json", "--namespace", "prism"])
        #expect(try JSONSerialization.jsonObject(with: api.body) as? NSObject
            == JSONSerialization.jsonObject(with: Data(cli.stdout.utf8)) as? NSObject)

        // The same batch again, gzip-encoded: every stored record is a duplicate, nothing new is stored.
        let again = try server.curl(
            "POST", "/api/v1/ingest", token: ingest, body: try gzipped(try sdkBatch(records)), headers: ["Content-Encoding: gzip"])
        let second = try outcomes(again)
        #expect(second.map { $0["status"] as? String } == [
            "duplicate", "dropped", "duplicate", "refused", "refused", "refused", "dropped", "duplicate", "duplicate", "refused",
        ], "\(again)")
        #expect((second[2]["ids"] as? [Int]) == [crashId])
        #expect(try h.sqlInt("SELECT COUNT(*) FROM reports") == 3)

        let metrics = try server.curl("GET", "/metrics", token: read)
        #expect(metrics.text.contains(#"stackline_sdk_records_total{status="dropped",monitor_class="other"} 4"#), "\(metrics.text)")

        // Retention takes the SDK's record ids with their reports.
        let pruned = try h.stackline(["prune", "--older-than", "2100-01-01"])
        #expect(pruned.status == 0, "\(pruned.stderr)")
        #expect(try h.sqlInt("SELECT COUNT(*) FROM reports") == 0)
        #expect(try h.sqlInt("SELECT COUNT(*) FROM sdk_records") == 0)
    }

    // A namespaced token's uploads and reads, whole-batch refusals and the remote configuration
    // are route checks: ServerTests' SDKRouteTests.aNamespacedTokenUploadsAndReadsOnlyItsNamespace.

    @Test func namespaceConfigurationsAndKeysAreValidated() throws {
        let h = try Harness()
        func configure(_ json: String) throws -> ProcessOutput {
            let file = h.dir.file("c-\(UUID().uuidString.prefix(6)).json")
            try Data(json.utf8).write(to: URL(fileURLWithPath: file))
            return try h.stackline(["namespaces", "configure", "prism", "--file", file])
        }
        for (json, message) in [
            (#"{"maxItem": "50"}"#, "maxItem must be an integer, not a string"),
            (#"{"maxItem": 500}"#, "maxItem must be 1…100"),
            (#"{"isUpload": 1}"#, "isUpload must be true or false, not an integer"),
            (#"{"maxitem": 5}"#, "maxitem is not a known key"),
            (#"{"url": "ftp://x"}"#, "url must be an absolute http or https URL"),
            (#"{"monitorList": [{"type": "appCrash", "onlyWifi": "no"}]}"#, "monitorList[0].onlyWifi must be true or false"),
            (#"{"monitorList": [{"onlyWifi": true}]}"#, "monitorList[0].type is missing"),
            (#"[1]"#, "must be a JSON object"),
            (#"{"maxItem": 5"#, "not JSON"),
        ] {
            let out = try configure(json)
            #expect(out.status == 1, "\(json)")
            #expect(out.stderr.contains(message), "\(json): \(out.stderr)")
        }
        // Nothing was stored by a refused configuration (not even a database was created).
        #expect(!FileManager.default.fileExists(atPath: h.dbPath))
        #expect(try configure(#"{"maxItem": 100, "expirationDay": 30}"#).status == 0)
        let stored = try #require(try sqlite(h.dbPath, "SELECT configuration FROM namespaces WHERE name = 'prism'").first?["configuration"] as? String)
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(stored.utf8)) as? [String: Any])
        #expect(parsed["maxItem"] as? Int == 100)
        #expect(parsed["expirationDay"] as? Int == 30)

        // Keys: printed once, replaced only on request, bad ones refused.
        let first = try h.stackline(["namespaces", "set-key", "prism", "--bits", "256"])
        #expect(first.stdout.trimmingCharacters(in: .whitespacesAndNewlines).count == 64)
        let again = try h.stackline(["namespaces", "set-key", "prism"])
        #expect(again.status == 1)
        #expect(again.stderr.contains("--replace"))
        #expect(try h.stackline(["namespaces", "set-key", "prism", "--key", "abc"]).stderr.contains("hexadecimal"))
        #expect(try h.stackline(["namespaces", "set-key", "prism", "--key", "00112233", "--replace"]).stderr.contains("16, 24 or 32"))
        #expect(try h.stackline(["namespaces", "set-key", "-bad"]).status != 0)
        let list = try h.stackline(["namespaces", "list", "--json"])
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(entries.map { $0["name"] as? String } == ["prism"])
        #expect(entries.first?["keyBits"] as? Int == 256)
        // The key itself is printed by set-key only.
        #expect(!list.stdout.contains(first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(!(try h.stackline(["namespaces", "list"])).stdout.contains(first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
    }
}

// docs/sdk-protocol.md's example batch: ServerTests' SDKRouteTests.theDocumentedExampleBatchIsAcceptedAsDocumented.
