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

    /// Reports uploaded by hand, without SDK meta (issue 32 §1: "from the report itself where it
    /// carries them"): `.ips` files from a public sample with their `modelCode`, `osVersion` and
    /// `crashReporterKey` set by the test, and `.crash` text with its `Hardware Model`, `OS
    /// Version` and `CrashReporter Key` lines set. Searches, facets and a group's users equal
    /// what the test wrote; an SDK record's meta wins over its payload's own values.
    @Test func reportsWithoutSDKMetaAreSearchedAndCountedByTheirOwnDevice() throws {
        let h = try Harness()
        #expect(try h.stackline(["namespaces", "set-key", "prism"]).status == 0)
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let server = try h.startServer(["--workers", "1"])

        struct Hand {
            var model: String?
            var os: String
            var key: String
            var ips: Bool
            var id: Int64 = 0
        }
        let models = ["Mac13,1", "Mac14,2", "MacBookPro18,3"]
        let oses = ["13.0", "13.4", "14.1"]
        let keys = (0..<5).map { String(format: "5C0FFEE%d-DBB1-4134-1FDE-68346F18AAA2", $0) }
        var hands: [Hand] = []
        for n in 0..<17 {
            // The last .ips leaves its model out: counted as absent, never guessed.
            hands.append(Hand(model: n == 11 ? nil : models[n % 3], os: oses[(n / 2) % 3], key: keys[(n * 7) % 5], ips: n < 12))
        }
        let ipsSample = String(decoding: try Data(contentsOf: URL(fileURLWithPath: TestPaths.packageRoot + "/Tests/Fixtures/wild/ips/asi.ips")), as: UTF8.self)
        let crashSample = String(decoding: try Data(contentsOf: URL(fileURLWithPath: TestPaths.packageRoot + "/Tests/Fixtures/wild/apple-crash/handcrafted.txt")), as: UTF8.self)
        func replacing(_ text: String, _ old: String, _ new: String) throws -> String {
            guard text.contains(old) else { throw TestSupportError("the sample no longer holds \(old)") }
            return text.replacingOccurrences(of: old, with: new)
        }
        func ips(_ hand: Hand, number: Int) throws -> String {
            var text = try replacing(ipsSample, #""train" : "macOS 13.0""#, #""train" : "macOS \#(hand.os)""#)
            text = try replacing(text, #""crashReporterKey" : "533C17C1-DBB1-4134-1FDE-68346F18AAA2""#, #""crashReporterKey" : "\#(hand.key)""#)
            text = try replacing(text, #""incident" : "E62DF457-8BBC-4E92-AECA-11D1B55246E3""#, #""incident" : "\#(number)""#)
            return try replacing(text, #""modelCode" : "Mac13,1","#, hand.model.map { #""modelCode" : "\#($0)","# } ?? "")
        }
        for n in hands.indices {
            let hand = hands[n]
            let body: String
            if hand.ips {
                body = try ips(hand, number: n)
            } else {
                var text = try replacing(crashSample, "Hardware Model:      MacBookPro14,3", "Hardware Model:      \(hand.model!)")
                text = try replacing(text, "OS Version:      Mac OS X 10.14.0 (18A391)", "OS Version:      Mac OS X \(hand.os) (18A391)")
                text = try replacing(text, "CrashReporter Key:   TODO", "CrashReporter Key:   \(hand.key)")
                body = try replacing(text, "Incident Identifier: 5C32DF84-31A0-43E7-87D0-239F7F594940", "Incident Identifier: \(n)")
            }
            let posted = try server.curl("POST", "/api/v1/reports", token: ingest, body: Data(body.utf8))
            #expect(posted.status == 202, "\(posted)")
            let id = posted.json?["id"] as? Int
            hands[n].id = Int64(try #require(id, "\(posted)"))
        }
        // One SDK record whose payload names Mac13,1 and macOS 13.0 itself: the meta's values count.
        let sdkPayloadText = try ips(Hand(model: "Mac13,1", os: "13.0", key: keys[0], ips: true), number: 99)
        let record = sdkRecord(
            "sdk-1", type: "appCrash", namespace: "prism", payload: try sdkPayload(Data(sdkPayloadText.utf8)),
            meta: ["app_name": "asi", "app_version": "1.0", "os_version": "99.1", "device_model": "SDK-Model", "device_id": "SDK-DEV"])
        let batch = try server.curl("POST", "/api/v1/ingest", token: ingest, body: try sdkBatch([record]))
        let sdkId = try #require(((batch.json?["records"] as? [[String: Any]])?.first?["ids"] as? [Int])?.first.map(Int64.init), "\(batch)")

        func search(_ expression: String) throws -> [Int64] {
            let answer = try server.curl(
                "GET", "/api/v1/reports?limit=1000&where=" + expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!, token: read)
            #expect(answer.status == 200, "\(expression): \(answer)")
            return ((answer.json?["reports"] as? [[String: Any]]) ?? []).compactMap { ($0["id"] as? Int).map(Int64.init) }
        }
        func ids(_ matches: (Hand) -> Bool) -> [Int64] { hands.filter(matches).map(\.id).sorted(by: >) }
        #expect(try search("device_model=Mac13,1") == ids { $0.model == "Mac13,1" })
        #expect(try search("model~macbook") == ids { $0.model == "MacBookPro18,3" })
        #expect(try search("os_version=13.4") == ids { $0.os == "13.4" })
        #expect(try search("os>=14") == [sdkId] + ids { $0.os == "14.1" })
        #expect(try search("user=\(keys[2])") == ids { $0.key == keys[2] })
        #expect(try search("device_model=SDK-Model os_version=99.1 user=SDK-DEV") == [sdkId])
        let rows = try #require(
            try server.curl("GET", "/api/v1/reports?limit=1000&where=os%3D13.0", token: read).json?["reports"] as? [[String: Any]])
        for row in rows {
            let hand = try #require(hands.first { $0.id == (row["id"] as? Int).map(Int64.init) }, "\(row)")
            #expect(row["deviceModel"] as? String == hand.model && row["osVersion"] as? String == hand.os, "\(row)")
        }

        let everything: [String?] = hands.map(\.os) + ["99.1"]
        try expectFacet(try server.curl("GET", "/api/v1/facets?key=os_version", token: read), everything, top: 10, key: "os_version", "os")
        try expectFacet(
            try server.curl("GET", "/api/v1/facets?key=device_model&where=app%3Dasi", token: read),
            hands.filter(\.ips).map(\.model) + [String?.some("SDK-Model")], top: 10, key: "device_model", "models of the .ips reports")

        // Users affected: the distinct device keys of a group's reports (the SDK record's device
        // counts once more), in the groups list and on the group.
        let total = hands.count + 1
        try h.waitUntil("\(total) reports processed") {
            try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state IN ('done', 'failed')") >= total
                && sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')") == 0
        }
        let groups = try #require(
            try JSONSerialization.jsonObject(with: try server.curl("GET", "/api/v1/groups?sort=users", token: read).body) as? [[String: Any]])
        let stored = try #require(try server.curl("GET", "/api/v1/reports?limit=1000", token: read).json?["reports"] as? [[String: Any]])
        for (ipsGroup, members) in [(true, hands.filter(\.ips)), (false, hands.filter { !$0.ips })] {
            let someId = try #require(members.first?.id)
            let fingerprint = try #require(stored.first { ($0["id"] as? Int).map(Int64.init) == someId }?["fingerprint"] as? String)
            let grouped = stored.filter { $0["fingerprint"] as? String == fingerprint }.compactMap { ($0["id"] as? Int).map(Int64.init) }
            #expect(Set(grouped) == Set(members.map(\.id) + (ipsGroup ? [sdkId] : [])), "one group per sample")
            let expected = Set(members.map(\.key)).count + (ipsGroup ? 1 : 0)
            let listed = try #require(groups.first { $0["fingerprint"] as? String == fingerprint }, "\(groups)")
            #expect(listed["users"] as? Int == expected, "\(listed)")
            #expect(listed["count"] as? Int == members.count + (ipsGroup ? 1 : 0), "\(listed)")
            let detail = try #require(try server.curl("GET", "/api/v1/groups/\(fingerprint)", token: read).json)
            #expect((detail["group"] as? [String: Any])?["users"] as? Int == expected, "\(detail)")
            let byVersion = (detail["byVersion"] as? [[String: Any]]) ?? []
            #expect(byVersion.reduce(0) { $0 + ($1["users"] as? Int ?? 0) } == expected, "\(byVersion)")
        }

        // The report page names the device, OS version and device key; a hostile stored value
        // (written past the parser, as a damaged row could be) is escaped.
        let shown = hands[0]
        let page = String(decoding: try server.curl("GET", "/reports/\(shown.id)", token: read).body, as: UTF8.self)
        #expect(page.contains(#"data-k="report-device">\#(shown.model!)</span>"#), "\(page)")
        #expect(page.contains(#"data-k="report-os-version">\#(shown.os)</span>"#))
        #expect(page.contains(#"data-k="report-user">\#(shown.key)</span>"#))
        let sdkPage = String(decoding: try server.curl("GET", "/reports/\(sdkId)", token: read).body, as: UTF8.self)
        #expect(sdkPage.contains(#"data-k="report-device">SDK-Model</span>"#) && sdkPage.contains(#"data-k="report-user">SDK-DEV</span>"#))
        _ = try sqlite(h.dbPath, "UPDATE reports SET device_model = '<img src=x onerror=alert(1)>' WHERE id = \(hands[1].id)")
        let hostile = String(decoding: try server.curl("GET", "/reports/\(hands[1].id)", token: read).body, as: UTF8.self)
        #expect(hostile.contains("&lt;img src=x onerror=alert(1)&gt;") && !hostile.contains("<img src=x"), "\(hostile)")
    }
}
