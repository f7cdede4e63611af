import Foundation
import TestSupport
import Testing

/// Triage through a real `stackline serve`: SDK batches of real Swift crashes from known users
/// and sessions, state changes with a `triage` token over curl, the regression alert through a
/// real webhook receiver, and merges that survive reprocessing and new grouping rules. Every
/// expected number comes from the records the test generated, and every count from `COUNT(*)`
/// in the sqlite3 shell.
@Suite(.serialized) struct TriageEndToEndTests {
    /// One generated crash record: which crash, its version, and who had it.
    struct Crash {
        var mode: String
        var version: String
        var user: String
        var session: String
    }

    func record(_ crash: Crash, number: Int) throws -> [String: Any] {
        // The same stderr with extra trailing newlines: distinct digests, the same crash.
        let stderr = try SwiftCrashProgram.shared.stderr(crash.mode, format: "text") + Data(String(repeating: "\n", count: number + 1).utf8)
        var record = sdkRecord(
            "crash-\(number)", type: "appCrash", namespace: "tri", payload: try sdkPayload(stderr),
            meta: [
                "app_name": "Ledger", "app_version": crash.version, "session_id": crash.session, "user_id": crash.user,
                "device_id": "dev-\(crash.user)", "os_version": "17.4", "device_model": "iPhone15,2",
            ])
        record["created_time"] = Int64(Date().timeIntervalSince1970 * 1000)
        return record
    }

    /// Sends crashes as one SDK batch; every record is accepted.
    func send(_ crashes: [Crash], from first: Int, _ server: ServerProcess, token: String) throws {
        let records = try crashes.enumerated().map { try record($0.element, number: first + $0.offset) }
        let answer = try server.curl("POST", "/api/v1/ingest", token: token, body: try sdkBatch(records))
        #expect(answer.status == 200, "\(answer)")
        let statuses = (answer.json?["records"] as? [[String: Any]])?.compactMap { $0["status"] as? String }
        #expect(statuses == Array(repeating: "accepted", count: crashes.count), "\(answer)")
    }

    /// Waits until every job is done (plain SQL), so counts and states are final.
    func drained(_ h: Harness, reports: Int) throws {
        try poll("\(reports) reports processed") {
            try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state = 'done'") >= reports
                && sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')") == 0
        }
    }

    func poll(_ what: String, timeout: Double = 240, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() {
            guard Date() < deadline else { throw TestSupportError("timed out waiting for \(what)") }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    /// Group counts from the ledger against `COUNT(*)` per fingerprint over `results`.
    func expectCountsExact(_ h: Harness, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let ledger = try sqlite(h.dbPath, "SELECT fingerprint, count FROM groups ORDER BY fingerprint")
        let truth = try sqlite(
            h.dbPath, "SELECT fingerprint, COUNT(*) AS count FROM results WHERE fingerprint IS NOT NULL GROUP BY fingerprint ORDER BY fingerprint")
        #expect(ledger.map { "\($0["fingerprint"] ?? "")=\($0["count"] ?? "")" } == truth.map { "\($0["fingerprint"] ?? "")=\($0["count"] ?? "")" },
                sourceLocation: sourceLocation)
    }

    func groups(_ server: ServerProcess, token: String) throws -> [[String: Any]] {
        let answer = try server.curl("GET", "/api/v1/groups?limit=100", token: token)
        #expect(answer.status == 200, "\(answer)")
        return try #require(try JSONSerialization.jsonObject(with: answer.body) as? [[String: Any]])
    }

    func group(_ server: ServerProcess, _ fingerprint: String, token: String) throws -> [String: Any] {
        let answer = try server.curl("GET", "/api/v1/groups/\(fingerprint)", token: token)
        #expect(answer.status == 200, "\(answer)")
        return try #require(answer.json)
    }

    /// The events the receiver accepted, of `kind`, as objects.
    func events(_ receiver: WebhookReceiver, kind: String) -> [[String: Any]] {
        receiver.requests.filter { $0["status"] as? Int == 200 }
            .compactMap { ($0["body"] as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] } }
            .filter { $0["kind"] as? String == kind }
    }

    func post(_ server: ServerProcess, _ path: String, _ body: String, token: String) throws -> HTTPAnswer {
        try server.curl("POST", path, token: token, body: Data(body.utf8), headers: ["Content-Type: application/json"])
    }

    @Test func statesRegressionsWakeUpsAndMergesThroughARealServer() throws {
        let h = try Harness()
        #expect(try h.stackline(["namespaces", "set-key", "tri"]).status == 0)
        let receiver = try WebhookReceiver(dir: h.dir.path, failures: 0)
        let rulesPath = h.dir.file("alerts.json")
        try """
            {"pollSeconds": 0.2,
             "targets": {"hook": {"type": "webhook", "url": "http://127.0.0.1:\(receiver.port)/hook"}},
             "rules": [{"name": "came-back", "kind": "regression", "severity": "error", "targets": ["hook"]}]}
            """.write(toFile: rulesPath, atomically: true, encoding: .utf8)
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let triage = try h.token("triage", ["--name", "alice"])
        var server = try h.startServer(["--workers", "1", "--alerts", rulesPath])

        // Version 1.0 and 1.1: the index crash for three users (one of them twice, in two
        // sessions), the unwrap crash for one.
        var crashes = [
            Crash(mode: "index", version: "1.0", user: "u1", session: "s1"),
            Crash(mode: "index", version: "1.0", user: "u1", session: "s2"),
            Crash(mode: "index", version: "1.0", user: "u2", session: "s3"),
            Crash(mode: "index", version: "1.1", user: "u3", session: "s4"),
            Crash(mode: "unwrap", version: "1.1", user: "u1", session: "s5"),
        ]
        var everything = crashes
        try send(crashes, from: 0, server, token: ingest)
        try drained(h, reports: crashes.count)
        var listed = try groups(server, token: read)
        #expect(listed.count == 2)
        func fingerprint(_ mode: String) throws -> String {
            let title = mode == "index" ? "Fatal error: Index out of range" : "Fatal error: Unexpectedly found nil"
            return try #require(listed.first { ($0["title"] as? String)?.hasPrefix(title) == true }?["fingerprint"] as? String, "\(listed)")
        }
        let (index, unwrap) = (try fingerprint("index"), try fingerprint("unwrap"))
        for (fp, mode) in [(index, "index"), (unwrap, "unwrap")] {
            let mine = crashes.filter { $0.mode == mode }
            let g = try #require(listed.first { $0["fingerprint"] as? String == fp })
            #expect(g["count"] as? Int == mine.count)
            #expect(g["users"] as? Int == Set(mine.map(\.user)).count)
            #expect(g["sessions"] as? Int == Set(mine.map(\.session)).count)
            #expect(g["state"] as? String == "open")
        }
        // Sorted by users: the index crash (3 users) first.
        let byUsers = try #require(try JSONSerialization.jsonObject(with: try server.curl("GET", "/api/v1/groups?sort=users", token: read).body) as? [[String: Any]])
        #expect(byUsers.map { $0["fingerprint"] as? String } == [index, unwrap])
        let perVersion = try #require(try group(server, index, token: read)["byVersion"] as? [[String: Any]])
        #expect(perVersion.map { "\($0["version"] ?? "") \($0["reports"] ?? "") \($0["users"] ?? "")" } == ["1.1 1 1", "1.0 3 2"])

        // A read token changes nothing; a triage token resolves in the next version.
        for path in ["state", "merge", "assign", "comments"] {
            #expect(try post(server, "/api/v1/groups/\(index)/\(path)", #"{"state": "resolved"}"#, token: read).status == 403, "\(path)")
        }
        let resolved = try post(server, "/api/v1/groups/\(index)/state", #"{"state": "resolved", "inNextVersion": true, "note": "fixed"}"#, token: triage)
        #expect(resolved.status == 200, "\(resolved)")
        #expect(resolved.json?["state"] as? String == "resolved")
        #expect(resolved.json?["resolvedVersion"] as? String == "1.1")
        #expect(try post(server, "/api/v1/groups/\(index)/state", #"{"state": "resolved", "untilUsers": 3}"#, token: triage).status == 400)
        // Search by state: the resolved group's reports, and none of the open one's.
        let found = try server.curl("GET", "/api/v1/reports?where=state%3Dresolved&limit=100", token: read)
        #expect((found.json?["reports"] as? [[String: Any]])?.count == everything.filter { $0.mode == "index" }.count, "\(found)")
        #expect((found.json?["reports"] as? [[String: Any]])?.allSatisfy { $0["fingerprint"] as? String == index } == true)
        #expect(try server.curl("GET", "/api/v1/reports?where=state%3Dfixed", token: read).status == 400)

        // An older version and the resolved one itself reopen nothing.
        var sent = crashes.count
        crashes = [Crash(mode: "index", version: "1.0", user: "u4", session: "s6"), Crash(mode: "index", version: "1.1", user: "u4", session: "s7")]
        everything += crashes
        try send(crashes, from: sent, server, token: ingest)
        sent += crashes.count
        try drained(h, reports: sent)
        #expect(try group(server, index, token: read)["group"].flatMap { ($0 as? [String: Any])?["state"] as? String } == "resolved")

        // Version 1.2 brings it back: the group reopens, marked, and one regression webhook.
        crashes = [Crash(mode: "index", version: "1.2", user: "u5", session: "s8"), Crash(mode: "index", version: "1.2", user: "u6", session: "s9")]
        everything += crashes
        try send(crashes, from: sent, server, token: ingest)
        sent += crashes.count
        try drained(h, reports: sent)
        try poll("a regression webhook") { !events(receiver, kind: "regression").isEmpty }
        let reopened = try #require(try group(server, index, token: read)["group"] as? [String: Any])
        #expect(reopened["state"] as? String == "open")
        #expect(reopened["regressedIn"] as? String == "1.2")
        // Killed and restarted: the evaluation starts again from the database, and sends nothing twice.
        server.signal(SIGKILL)
        _ = try server.waitForExit()
        server = try h.startServer(["--workers", "1", "--alerts", rulesPath], log: "serve-2")
        crashes = [Crash(mode: "unwrap", version: "1.1", user: "u2", session: "s10")]
        everything += crashes
        try send(crashes, from: sent, server, token: ingest)
        sent += crashes.count
        try drained(h, reports: sent)
        try poll("every alert evaluated") {
            try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM alert_cursors WHERE name = 'results' AND value >= (SELECT MAX(rowid) FROM results)") > 0
        }
        let regressions = events(receiver, kind: "regression")
        #expect(regressions.count == 1, "\(regressions)")
        #expect(regressions.first?["fingerprint"] as? String == index)
        #expect(regressions.first?["version"] as? String == "1.2")
        #expect(regressions.first?["previousVersion"] as? String == "1.1")

        // Ignored until 2 more users: the same user again is one, a new user is two.
        #expect(try post(server, "/api/v1/groups/\(unwrap)/state", #"{"state": "ignored", "untilUsers": 2}"#, token: triage).status == 200)
        crashes = [Crash(mode: "unwrap", version: "1.1", user: "u7", session: "s11"), Crash(mode: "unwrap", version: "1.1", user: "u7", session: "s12")]
        everything += crashes
        try send(crashes, from: sent, server, token: ingest)
        sent += crashes.count
        try drained(h, reports: sent)
        #expect((try group(server, unwrap, token: read)["group"] as? [String: Any])?["state"] as? String == "ignored")
        crashes = [Crash(mode: "unwrap", version: "1.1", user: "u8", session: "s13")]
        everything += crashes
        try send(crashes, from: sent, server, token: ingest)
        sent += crashes.count
        try drained(h, reports: sent)
        let woke = try group(server, unwrap, token: read)
        #expect((woke["group"] as? [String: Any])?["state"] as? String == "open")
        let history = try #require(woke["history"] as? [[String: Any]])
        #expect(history.map { $0["action"] as? String } == ["woke", "ignored"])
        #expect(history.last?["actor"] as? String == "alice")

        // Assign and comment; hostile text is refused, ordinary text stored exactly.
        #expect(try post(server, "/api/v1/groups/\(index)/assign", #"{"assignee": "bob"}"#, token: triage).status == 200)
        #expect(try post(server, "/api/v1/groups/\(index)/assign", #"{"assignee": "bob\u001b[2J"}"#, token: triage).status == 400)
        let comment = try post(server, "/api/v1/groups/\(index)/comments", #"{"text": "<script>alert(1)</script>\nline two"}"#, token: triage)
        #expect(comment.status == 201, "\(comment)")
        #expect(comment.json?["note"] as? String == "<script>alert(1)</script>\nline two")

        // Merge the unwrap crash into the index crash: one group, exact counts.
        let merged = try post(server, "/api/v1/groups/\(unwrap)/merge", #"{"into": "\#(index)"}"#, token: triage)
        #expect(merged.status == 200, "\(merged)")
        listed = try groups(server, token: read)
        #expect(listed.map { $0["fingerprint"] as? String } == [index])
        #expect(listed.first?["count"] as? Int == sent)
        try expectCountsExact(h)

        // Reprocessed: still one group. Then new grouping rules: every fingerprint changes, and
        // the merge holds under the new ones.
        #expect(try h.stackline(["reprocess", "--all"]).status == 0)
        try drained(h, reports: sent * 2)
        try expectCountsExact(h)
        #expect(try groups(server, token: read).map { $0["count"] as? Int } == [sent])
        server.signal(SIGTERM)
        _ = try server.waitForExit()
        let rulesV2 = h.dir.file("rules-v2.json")
        try GroupingRulesEndToEndTests.rules(version: 2).write(to: URL(fileURLWithPath: rulesV2))
        server = try h.startServer(["--workers", "1", "--grouping-rules", rulesV2], log: "serve-3")
        #expect(try h.stackline(["reprocess", "--all"]).status == 0)
        try drained(h, reports: sent * 3)
        try expectCountsExact(h)
        let afterRules = try groups(server, token: read)
        #expect(afterRules.count == 1, "\(afterRules)")
        #expect(afterRules.first?["count"] as? Int == sent)
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(DISTINCT rules_version) FROM groups") == 1)
        #expect(try sqliteInt(h.dbPath, "SELECT rules_version FROM groups") == 2)

        // Unmerged: the unwrap crash's reports (under their new fingerprint) come back apart.
        let unwrapV2 = try #require(
            try sqlite(h.dbPath, "SELECT DISTINCT own_fingerprint AS f FROM results WHERE own_fingerprint IS NOT NULL").first?["f"] as? String)
        let unmerged = try server.curl("POST", "/api/v1/groups/\(unwrapV2)/unmerge", token: triage)
        #expect(unmerged.status == 200, "\(unmerged)")
        let apart = try groups(server, token: read)
        try expectCountsExact(h)
        let unwrapCount = everything.filter { $0.mode == "unwrap" }.count
        #expect(apart.compactMap { $0["count"] as? Int }.sorted() == [unwrapCount, sent - unwrapCount].sorted(), "\(apart)")
        #expect(apart.contains { $0["fingerprint"] as? String == unwrapV2 && $0["count"] as? Int == unwrapCount })
    }

    /// The group page in headless Chromium: a `read` token sees users, sessions and state but no
    /// forms; a `triage` token resolves and merges through the page's own forms; a form post
    /// without the session's CSRF token, from another origin, or with a `read` token is refused.
    @Test func theGroupPageShowsTheStateAndItsFormsChangeIt() throws {
        let h = try Harness()
        #expect(try h.stackline(["namespaces", "set-key", "tri"]).status == 0)
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let triage = try h.token("triage", ["--name", "alice"])
        let server = try h.startServer(["--workers", "1"])
        let crashes = [
            Crash(mode: "index", version: "1.0", user: "u1", session: "s1"),
            Crash(mode: "index", version: "1.1", user: "u2", session: "s2"),
            Crash(mode: "index", version: "1.1", user: "u2", session: "s3"),
            Crash(mode: "unwrap", version: "1.1", user: "u3", session: "s4"),
        ]
        try send(crashes, from: 0, server, token: ingest)
        try drained(h, reports: crashes.count)
        let listed = try groups(server, token: read)
        let index = try #require(listed.first { $0["count"] as? Int == 3 }?["fingerprint"] as? String)
        let unwrap = try #require(listed.first { $0["count"] as? Int == 1 }?["fingerprint"] as? String)

        let web = WebViewEndToEndTests()
        let artifacts = WebViewEndToEndTests.artifacts + "-triage"
        let asReader = try web.load(server, token: read, ["read-group=/groups/\(index)"], in: h.dir.file("browser-read"), artifacts: artifacts)
        let page = try #require(asReader["read-group"])
        #expect(page.text("group-users") == "2")
        #expect(page.text("group-sessions") == "3")
        #expect(page.text("group-state") == "open")
        #expect(page.elements(prefix: "action:").isEmpty, "a read token sees no triage forms")
        #expect(page.text("impact:1.1")?.contains("2") == true)

        let note = "<b>fixed</b> in #42"
        let asTriager = try web.load(
            server, token: triage,
            ["resolved=/groups/\(index)>resolve-next?note=\(note.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")",
             "merged=/groups/\(unwrap)>merge?into=\(index)"],
            in: h.dir.file("browser-triage"), artifacts: artifacts)
        let resolved = try #require(asTriager["resolved"])
        #expect(resolved.url.hasSuffix("/groups/\(index)"), "\(resolved.url)")
        #expect(resolved.text("group-state") == "resolved")
        #expect(!resolved.elements(prefix: "action:").isEmpty)
        #expect(resolved.elements(prefix: "history:").contains { ($0["text"] as? String)?.contains(note) == true }, "the note, as text")
        #expect(!resolved.html.contains(note), "the note is escaped in the page")
        let merged = try #require(asTriager["merged"])
        #expect(merged.url.hasSuffix("/groups/\(index)"), "after a merge, the group it went into: \(merged.url)")
        #expect(merged.text("group-count") == "4")
        for p in [page, resolved, merged] {
            #expect(p.facts["scripts"] as? [String?] == ["/static/web.js"], "\(p.name)")
            #expect(p.facts["inlineHandlers"] as? Int == 0, "\(p.name)")
            #expect(!p.console.contains { $0.contains("Content Security Policy") || $0.contains("Refused") }, "\(p.name): \(p.console)")
        }
        // The search page and the group's facets, for a read token: numbers from the records sent.
        let browsed = try web.load(
            server, token: read,
            ["search=/search?where=version%3D1.1", "faceted=/groups/\(index)", "bad-search=/search?where=%3Cscript%3E%3D1"],
            in: h.dir.file("browser-search"), artifacts: artifacts)
        let search = try #require(browsed["search"])
        #expect(search.elements(prefix: "result:").count == crashes.filter { $0.version == "1.1" }.count)
        #expect(search.text("facet:os_version:17.4")?.hasSuffix("\(crashes.filter { $0.version == "1.1" }.count)") == true,
                "\(search.elements(prefix: "facet:"))")
        let faceted = try #require(browsed["faceted"])
        #expect(faceted.text("facet:device_model:iPhone15,2")?.hasSuffix("\(crashes.count)") == true, "\(faceted.elements(prefix: "facet:"))")
        #expect(faceted.text("facet:version:1.1")?.hasSuffix("\(crashes.filter { $0.version == "1.1" }.count)") == true)
        let bad = try #require(browsed["bad-search"])
        #expect(bad.text("search-error")?.hasPrefix("where: column 1: expected a field") == true, "\(bad.elements)")
        #expect(!bad.html.contains("<script>="), "the refused expression is escaped")

        // What the browser did, as the API tells it.
        let detail = try group(server, index, token: read)
        let t = try #require(detail["triage"] as? [String: Any])
        #expect(t["state"] as? String == "resolved")
        #expect(t["resolution"] as? String == "nextVersion")
        #expect(t["resolvedVersion"] as? String == "1.1")
        let history = try #require(detail["history"] as? [[String: Any]])
        #expect(history.map { $0["action"] as? String } == ["merged", "resolved"])
        #expect(history.allSatisfy { $0["actor"] as? String == "alice" })
        #expect(history.last?["note"] as? String == note)
        try expectCountsExact(h)

        // Refusals: a read token's post, a post without the CSRF token, a post from elsewhere.
        let form = Data("action=reopen".utf8)
        let formType = "Content-Type: application/x-www-form-urlencoded"
        #expect(try server.curl("POST", "/groups/\(index)/actions", token: read, body: form, headers: [formType]).status == 403)
        let jar = h.dir.file("cookies")
        let login = try server.curl(
            "POST", "/login", body: Data("token=\(triage)".utf8), headers: [formType], extra: ["-c", jar])
        #expect(login.status == 303, "\(login)")
        #expect(try server.curl("POST", "/groups/\(index)/actions", body: form, headers: [formType], extra: ["-b", jar]).status == 403)
        #expect(try server.curl(
            "POST", "/groups/\(index)/actions", body: form, headers: [formType, "Origin: http://evil.example"], extra: ["-b", jar]).status == 403)
        #expect((try group(server, index, token: read)["triage"] as? [String: Any])?["state"] as? String == "resolved", "nothing changed")
    }
}
