import Foundation
import TestSupport
import Testing

/// Search and facets (issue 32 §2, §4) over SDK batches sent to a real `stackline serve`:
/// launches, crashes and hangs of three versions from known devices and users, with OS
/// versions, device models and custom meta keys. Every expected set and count is computed here
/// from the generated records, never by Stackline's code.
@Suite(.serialized) struct SearchAndFacetsTests {
    struct Device {
        var id: String
        var user: String?
        var os: String
        var model: String
    }

    /// One generated crash or hang record and the report it became.
    struct Sent {
        var sdkId: String
        var kind: String
        var version: String
        var device: Device
        /// The custom meta key `channel`; some records leave it out.
        var channel: String?
        var reportId: Int64 = 0
    }

    static let devices: [Device] = (0..<24).map { i in
        Device(
            id: String(format: "DEV-%04X", i * 4099), user: i % 3 == 0 ? nil : "user-\(i % 10)",
            os: ["16.7.2", "17.2", "17.4", "18.1"][i % 4],
            model: ["iPhone14,2", "iPhone15,2", "iPhone15,3", "iPad13,4", "<script>alert(1)</script>"][i % 5])
    }
    /// "3.10" is the newest: a text order would put it first.
    static let versions = ["3.3", "3.4", "3.10"]
    static let channels: [String?] = ["appstore", "testflight", nil]

    func meta(_ s: Sent, session: String) -> [String: Any] {
        var meta: [String: Any] = [
            "app_name": "Prism", "app_version": s.version, "os_version": s.device.os, "device_model": s.device.model,
            "device_id": s.device.id, "session_id": session, "system": "iOS",
        ]
        if let user = s.device.user { meta["user_id"] = user }
        if let channel = s.channel { meta["channel"] = channel }
        return meta
    }

    /// Counts by value, top `n` (count descending, then value; nil last among equals) and the rest.
    func facet(_ values: [String?], top n: Int) -> (values: [(String?, Int)], other: Int) {
        let counts = Dictionary(grouping: values, by: { $0 }).mapValues(\.count)
        let sorted = counts.sorted { a, b in
            if a.value != b.value { return a.value > b.value }
            switch (a.key, b.key) {
            case (nil, _): return false
            case (_, nil): return true
            case (let x?, let y?): return x < y
            }
        }
        let top = Array(sorted.prefix(n)).map { ($0.key, $0.value) }
        return (top, values.count - top.reduce(0) { $0 + $1.1 })
    }

    func expectFacet(_ answer: HTTPAnswer, _ values: [String?], top: Int, key: String, _ comment: Comment) throws {
        #expect(answer.status == 200, "\(answer)")
        let json = try #require(answer.json, "\(answer)")
        let expected = facet(values, top: top)
        #expect(json["key"] as? String == key, comment)
        #expect(json["total"] as? Int == values.count, comment)
        #expect(json["other"] as? Int == expected.other, comment)
        let got = try #require(json["values"] as? [[String: Any]], "\(answer)")
        #expect(got.count == expected.values.count, comment)
        for (row, want) in zip(got, expected.values) {
            // Absent values are left out (docs/json.md): the reports without the attribute have no `value`.
            #expect(row["value"] as? String == want.0 && (row["value"] == nil) == (want.0 == nil), "\(comment): \(row) vs \(want)")
            #expect(row["count"] as? Int == want.1, "\(comment): \(row) vs \(want)")
        }
    }

    @Test func searchAndFacetsEqualWhatTheBatchesHeld() throws {
        let h = try Harness()
        #expect(try h.stackline(["namespaces", "set-key", "prism"]).status == 0)
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let server = try h.startServer(["--workers", "1"])

        var generator = SeededGenerator(seed: 324)
        let day = Int64(Date().timeIntervalSince1970 * 1000) / 86_400_000
        func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &generator)] }
        var sent: [Sent] = []
        for n in 0..<60 {
            sent.append(Sent(sdkId: "crash-\(n)", kind: "crash", version: pick(Self.versions), device: pick(Self.devices), channel: pick(Self.channels)))
        }
        for n in 0..<20 {
            sent.append(Sent(sdkId: "hang-\(n)", kind: "lag", version: pick(Self.versions), device: pick(Self.devices), channel: pick(Self.channels)))
        }
        let crash = try CrashFixture.shared.report(symbolicate: "off")
        let hang = Data(#"{"type": "lag", "app": {"name": "Prism", "version": "9.9"}, "dyld_images": [{"name": "Prism", "uuid": "4c4c4411-5555-3144-a1b2-c3d4e5f60718", "base_addr": "0x100000000"}], "samples": [["0x100004a10", "0x100003f21"]]}"#.utf8)
        var records: [[String: Any]] = []
        for (n, s) in sent.enumerated() {
            var record = sdkRecord(
                s.sdkId, type: s.kind == "crash" ? "appCrash" : "appLag", namespace: "prism",
                payload: try sdkPayload(variant(of: s.kind == "crash" ? crash : hang, number: n)), meta: meta(s, session: "S-\(n)"))
            record["created_time"] = day * 86_400_000 + Int64(n)
            records.append(record)
        }
        // Launches are counted, never reports: a search must not find them.
        for n in 0..<30 {
            var boot = sdkRecord("boot-\(n)", type: "appBoot", namespace: "prism", meta: meta(sent[n], session: "B-\(n)"))
            boot["created_time"] = day * 86_400_000
            records.append(boot)
        }
        let answer = try server.curl("POST", "/api/v1/ingest", token: ingest, body: try sdkBatch(records))
        #expect(answer.status == 200, "\(answer)")
        let outcomes = try #require(answer.json?["records"] as? [[String: Any]], "\(answer)")
        #expect(outcomes.allSatisfy { $0["status"] as? String == "accepted" }, "\(answer)")
        for (n, outcome) in outcomes.prefix(sent.count).enumerated() {
            sent[n].reportId = try #require((outcome["ids"] as? [Int])?.first.map(Int64.init), "\(outcome)")
        }
        let crashes = sent.filter { $0.kind == "crash" }

        // Reports are searchable as soon as they are stored; groups once processed.
        func ids(_ answer: HTTPAnswer) -> [Int64] {
            ((answer.json?["reports"] as? [[String: Any]]) ?? []).compactMap { ($0["id"] as? Int).map(Int64.init) }
        }
        func search(_ expression: String, limit: Int = 1000, cursor: String? = nil) throws -> HTTPAnswer {
            var path = "/api/v1/reports?limit=\(limit)&where=" + expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            if let cursor { path += "&cursor=" + cursor }
            return try server.curl("GET", path, token: read)
        }
        func expectSearch(_ expression: String, _ matches: (Sent) -> Bool) throws {
            let answer = try search(expression)
            #expect(answer.status == 200, "\(expression): \(answer)")
            let want = sent.filter(matches).map(\.reportId).sorted(by: >)
            #expect(ids(answer) == want, "\(expression)")
        }

        // The issue's example, and each field alone. Versions at or after 3.4 in version order
        // are 3.4 and 3.10, listed by hand.
        try expectSearch("os_version=17.2 device_model~iphone15 version>=3.4 meta.channel=appstore") {
            $0.device.os == "17.2" && $0.device.model.lowercased().contains("iphone15") && ["3.4", "3.10"].contains($0.version)
                && $0.channel == "appstore"
        }
        try expectSearch("") { _ in true }
        try expectSearch("kind=lag") { $0.kind == "lag" }
        try expectSearch("kind!=lag app=Prism") { $0.kind == "crash" }
        try expectSearch("version>3.4") { $0.version == "3.10" }
        try expectSearch("version<3.10") { ["3.3", "3.4"].contains($0.version) }
        try expectSearch("version=3.4") { $0.version == "3.4" }
        try expectSearch("os>=17.4") { ["17.4", "18.1"].contains($0.device.os) }
        try expectSearch("os!=17.2") { $0.device.os != "17.2" }
        try expectSearch("model!~iphone") { !$0.device.model.lowercased().contains("iphone") }
        try expectSearch(#"device_model="<script>alert(1)</script>""#) { $0.device.model == "<script>alert(1)</script>" }
        try expectSearch("meta.channel!=appstore") { $0.channel != "appstore" }
        try expectSearch("meta.channel~FLIGHT") { $0.channel == "testflight" }
        try expectSearch("meta.system=iOS meta.nothing!=x") { _ in true }
        try expectSearch("user=user-4") { $0.device.user == "user-4" }
        try expectSearch("user=\(Self.devices[3].id)") { $0.device.id == Self.devices[3].id }
        try expectSearch("namespace=prism time>1h time<=2099-01-01") { _ in true }
        try expectSearch("time<2000-01-01T00:00:00Z") { _ in false }

        // Pages of 7, newest first: every crash once, in order.
        var paged: [Int64] = []
        var cursor: String?
        var pages = 0
        repeat {
            let page = try search("kind=crash", limit: 7, cursor: cursor)
            #expect(page.status == 200, "\(page)")
            paged += ids(page)
            cursor = page.json?["nextCursor"] as? String
            pages += 1
        } while cursor != nil && pages < 20
        #expect(paged == crashes.map(\.reportId).sorted(by: >))
        #expect(pages == (crashes.count + 6) / 7)

        // Facets over everything and over a search, top N plus other.
        let all = sent
        try expectFacet(try server.curl("GET", "/api/v1/facets?key=os_version", token: read), all.map { $0.device.os }, top: 10, key: "os_version", "os")
        try expectFacet(try server.curl("GET", "/api/v1/facets?key=model&top=2", token: read), all.map { $0.device.model }, top: 2, key: "device_model", "model top 2")
        try expectFacet(try server.curl("GET", "/api/v1/facets?key=version", token: read), all.map(\.version), top: 10, key: "version", "version")
        try expectFacet(try server.curl("GET", "/api/v1/facets?key=kind", token: read), all.map(\.kind), top: 10, key: "kind", "kind")
        try expectFacet(
            try server.curl("GET", "/api/v1/facets?key=meta.channel&where=kind%3Dlag", token: read),
            all.filter { $0.kind == "lag" }.map(\.channel), top: 10, key: "meta.channel", "channel of hangs")
        try expectFacet(
            try server.curl("GET", "/api/v1/facets?key=device_model&where=version%3E%3D3.4%20meta.channel%3Dappstore&top=3", token: read),
            all.filter { ["3.4", "3.10"].contains($0.version) && $0.channel == "appstore" }.map { $0.device.model }, top: 3,
            key: "device_model", "models of a search")

        // A group's facets, once every report is processed. The crashes are variants of one
        // report, so their group holds them all (checked through the groups list).
        let deadline = Date().addingTimeInterval(240)
        var groups: [[String: Any]] = []
        while Date() < deadline {
            groups = (try JSONSerialization.jsonObject(with: try server.curl("GET", "/api/v1/groups", token: read).body) as? [[String: Any]]) ?? []
            if groups.reduce(0, { $0 + ($1["count"] as? Int ?? 0) }) == sent.count { break }
            Thread.sleep(forTimeInterval: 0.5)
        }
        let crashGroup = try #require(groups.first { $0["kind"] as? String == "crash" }, "\(groups)")
        #expect(crashGroup["count"] as? Int == crashes.count)
        let fingerprint = try #require(crashGroup["fingerprint"] as? String)
        try expectFacet(
            try server.curl("GET", "/api/v1/groups/\(fingerprint.prefix(12))/facets?key=os", token: read), crashes.map { $0.device.os },
            top: 10, key: "os_version", "group os")
        try expectFacet(
            try server.curl("GET", "/api/v1/groups/\(fingerprint)/facets?key=meta.channel&where=version%3C3.10", token: read),
            crashes.filter { $0.version != "3.10" }.map(\.channel), top: 10, key: "meta.channel", "group channel")
        try expectSearch("group=\(fingerprint.prefix(10)) model~ipad") { $0.kind == "crash" && $0.device.model == "iPad13,4" }
        let rows = try #require(try search("group=\(fingerprint)").json?["reports"] as? [[String: Any]])
        #expect(rows.allSatisfy { $0["fingerprint"] as? String == fingerprint && $0["title"] is String })

        // Refusals: the parser's message, never a 5xx.
        let bad = try search("kind=crash osversion=17.2")
        #expect(bad.status == 400)
        #expect((bad.json?["error"] as? String)?.hasPrefix("where: column 12: unknown field 'osversion'") == true, "\(bad)")
        #expect(try search("app=\"unterminated").status == 400)
        #expect(try server.curl("GET", "/api/v1/facets", token: read).status == 400)
        #expect(try server.curl("GET", "/api/v1/facets?key=time", token: read).status == 400)
        #expect(try server.curl("GET", "/api/v1/facets?key=os&top=101", token: read).status == 400)
        #expect(try server.curl("GET", "/api/v1/reports?cursor=-1", token: read).status == 400)
        #expect(try server.curl("GET", "/api/v1/reports?limit=0", token: read).status == 400)
        #expect(try server.curl("GET", "/api/v1/groups/zz/facets?key=os", token: read).status == 400)
        #expect(try server.curl("GET", "/api/v1/groups/0000000/facets?key=os", token: read).status == 404)
        // Scopes.
        #expect(try server.curl("GET", "/api/v1/reports", token: ingest).status == 403)
        #expect(try server.curl("GET", "/api/v1/facets?key=os").status == 401)

        // The CLI prints the same documents.
        let expression = "os_version=17.2 version>=3.4"
        let cli = try h.stackline(["reports", "--where", expression, "--limit", "1000", "--json"])
        #expect(cli.status == 0, "\(cli.stderr)")
        let api = try search(expression)
        #expect(try JSONSerialization.jsonObject(with: Data(cli.stdout.utf8)) as? NSDictionary == api.json as NSDictionary?)
        let cliFacets = try h.stackline(["facets", "device_model", "--group", String(fingerprint.prefix(12)), "--top", "3", "--json"])
        #expect(cliFacets.status == 0, "\(cliFacets.stderr)")
        let apiFacets = try server.curl("GET", "/api/v1/groups/\(fingerprint)/facets?key=device_model&top=3", token: read)
        #expect(try JSONSerialization.jsonObject(with: Data(cliFacets.stdout.utf8)) as? NSDictionary == apiFacets.json as NSDictionary?)
        let usage = try h.stackline(["reports", "--where", "model=x kind~crash"])
        #expect(usage.status == 2)
        #expect(usage.stderr.contains("where: column 13: 'kind' does not take '~' (it takes = !=)"), "\(usage.stderr)")

        // A hostile value stored before ingest refused control characters (a row migrated from
        // an old meta): escaped in text, exact in JSON.
        let hostile = "\u{1b}[31m<script>"
        let target = crashes[0].reportId
        _ = try sqlite(h.dbPath, "UPDATE report_sessions SET device_model = '\(hostile)' WHERE report_id = \(target)")
        let table = try h.stackline(["reports", "--where", "kind=crash", "--limit", "1000"])
        #expect(table.status == 0)
        #expect(!table.stdout.contains("\u{1b}") && table.stdout.contains("\\u{1b}[31m<script>"), "\(table.stdout)")
        let facetTable = try h.stackline(["facets", "model"])
        #expect(!facetTable.stdout.contains("\u{1b}") && facetTable.stdout.contains("\\u{1b}[31m<script>"), "\(facetTable.stdout)")
        let exact = try h.stackline(["reports", "--where", "kind=crash", "--limit", "1000", "--json"])
        let exactRows = try #require((try JSONSerialization.jsonObject(with: Data(exact.stdout.utf8)) as? [String: Any])?["reports"] as? [[String: Any]])
        #expect(exactRows.first { ($0["id"] as? Int).map(Int64.init) == target }?["deviceModel"] as? String == hostile)
        let overHTTP = try #require(try search("kind=crash").json?["reports"] as? [[String: Any]])
        #expect(overHTTP.first { ($0["id"] as? Int).map(Int64.init) == target }?["deviceModel"] as? String == hostile)
    }
}
