import Foundation
import TestSupport
import Testing

/// Issue 28's smaller findings against a real `stackline serve` on loopback: F5 (sign-out),
/// F7 (file modes), F8 (duplicates across namespaces), F9 (worker ids), F10 (Cache-Control) and
/// HEAD. The oracles are curl's and a raw socket's view of the answers, `stat`, `sqlite3` and
/// `sha256sum`, never the server's own account.
extension AttackTests {
    // MARK: F5

    @Test func signOutAndRevocationEndTheSessionOnTheServer() throws {
        let h = try Harness()
        let read = try h.token("read")
        let other = try h.token("read")
        // `sl_<id>_<secret>`: the id `tokens revoke` takes.
        let otherId = try #require(other.split(separator: "_").dropFirst().first.flatMap { Int($0) })
        let server = try h.startServer(["--workers", "0"])

        func signIn(_ token: String) throws -> String {
            let login = try server.curl("POST", "/login", body: Data("token=\(token)".utf8))
            try #require(login.status == 303, "\(login)")
            return String(try #require(login.headers["set-cookie"]).split(separator: ";")[0])
        }
        func page(_ cookie: String) throws -> HTTPAnswer { try server.curl("GET", "/symbols", headers: ["Cookie: \(cookie)"]) }

        // Two browsers signed in with the same token; an attacker keeps a copy of the first cookie.
        let copied = try signIn(read)
        let secondBrowser = try signIn(read)
        #expect(try page(copied).status == 200)
        #expect(try page(secondBrowser).status == 200)

        let logout = try server.curl("POST", "/logout", headers: ["Cookie: \(copied)"])
        #expect(logout.status == 303 && logout.headers["set-cookie"]?.contains("Max-Age=0") == true, "\(logout)")
        // The copy no longer works: the browser's way of asking, sent to sign in again.
        let replayed = try page(copied)
        #expect(replayed.status == 303, "\(replayed)")
        #expect(replayed.headers["location"]?.hasPrefix("/login") == true, "\(replayed.headers)")
        // Sign-out ends every session of the token signed in before it.
        #expect(try page(secondBrowser).status == 303)
        // A fresh sign-in works again.
        #expect(try page(try signIn(read)).status == 200)

        // Revoking a token ends its session at once.
        let revokedSession = try signIn(other)
        #expect(try page(revokedSession).status == 200)
        #expect(try h.stackline(["tokens", "revoke", "\(otherId)"]).status == 0)
        let afterRevoke = try page(revokedSession)
        #expect(afterRevoke.status == 303, "\(afterRevoke)")
        #expect(Self.healthy(server))
    }

    // MARK: F7

    /// Everything below `root` by `stat` (the oracle): mode in octal, type, path.
    static func modes(under root: String) throws -> [(mode: String, type: String, path: String)] {
        let out = try runProcess("find", [root, "-exec", "stat", "-c", "%a\t%F\t%n", "{}", "+"])
        try #require(out.succeeded, "\(out.summary)")
        return out.stdout.split(separator: "\n").map { line in
            let parts = line.split(separator: "\t", maxSplits: 2).map(String.init)
            return (parts[0], parts[1], parts.count > 2 ? parts[2] : "")
        }
    }

    @Test func databaseStoreIncomingAndWorkerCacheArePrivateUnderUmask022() throws {
        // The usual umask, which leaves what is created readable by everyone; the processes
        // below inherit it. Restored after (it is per process; the suite is serialized).
        let previous = umask(0o022)
        defer { umask(previous) }
        let h = try Harness()
        let data = h.dir.file("private-data")
        let store = data + "/symbols", cache = data + "/worker-cache", db = data + "/db/stackline.sqlite"
        h.extraEnvironment = ["STACKLINE_DB": db]
        let symbols = try h.token("symbols"), ingest = try h.token("ingest"), worker = try h.token("worker")
        // A remote worker does the job, so it fetches the debug file into its cache.
        let server = try ServerProcess(
            arguments: ["--symbols", store, "--workers", "0"], environment: h.environment, logPath: h.dir.file("serve-modes.log"))

        // A debug file through the API (the `.incoming` folder) and a report that needs it.
        let binary = try CrashFixture.shared.binary()
        let upload = try server.curl("POST", "/api/v1/symbols?name=Demo", token: symbols, body: try Data(contentsOf: URL(fileURLWithPath: binary)))
        #expect(upload.status == 200, "\(upload)")
        let posted = try server.curl("POST", "/api/v1/reports", token: ingest, body: try CrashFixture.shared.report(symbolicate: "off"))
        #expect(posted.status == 202, "\(posted)")

        let process = try h.startConnectedWorker(server.baseURL, token: worker, name: "modes", cache: cache)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        try h.waitUntil("the report symbolicated by the remote worker", timeout: 240) {
            try sqliteInt(db, "SELECT count(*) FROM results") == 1
        }

        // While both run: the database with its -wal and -shm, the store, `.incoming`, the cache.
        let listing = try Self.modes(under: data)
        let names = Set(listing.map { ($0.path as NSString).lastPathComponent })
        for expected in ["stackline.sqlite", "stackline.sqlite-wal", "stackline.sqlite-shm", ".incoming", ".fetching"] {
            #expect(names.contains(expected), "\(expected) not found in \(listing.map(\.path))")
        }
        #expect(listing.contains { $0.path.hasPrefix(cache + "/") && $0.type.contains("regular") }, "the worker's cache holds the fetched file: \(listing)")
        #expect(listing.contains { $0.path.hasPrefix(store + "/.build-id/") && $0.type.contains("regular") })
        for entry in listing where entry.path != data {
            let wanted = entry.type == "directory" ? "700" : "600"
            #expect(entry.mode == wanted, "\(entry.path) (\(entry.type)) is \(entry.mode), not \(wanted)")
        }
        #expect(Self.healthy(server))
    }

    @Test func theShippedWorkerUnitSetsAPrivateUmaskAndCacheDirectory() throws {
        let text = try String(contentsOfFile: packageRoot + "/Workers/systemd/stackline-worker.service", encoding: .utf8)
        let lines = Set(text.split(separator: "\n").map(String.init))
        #expect(lines.contains("UMask=0077"))
        #expect(lines.contains("CacheDirectoryMode=0700"))
        // systemd's own reading of the whole unit is WorkerDeploymentTests'.
    }

    // MARK: F8

    @Test func duplicatesAreDetectedWithinANamespaceOnly() throws {
        let h = try Harness()
        let tenantA = try h.token("ingest", ["--namespace", "tenant-a"])
        let tenantB = try h.token("ingest", ["--namespace", "tenant-b"])
        let plain = try h.token("ingest")
        let server = try h.startServer(["--workers", "0"])
        let bytes = variant(of: try CrashFixture.shared.report(symbolicate: "off"), number: 28)

        func post(_ token: String) throws -> (id: Int, duplicate: Bool, text: String) {
            let answer = try server.curl("POST", "/api/v1/reports", token: token, body: bytes)
            try #require(answer.status == 202, "\(answer)")
            return (try #require(answer.json?["id"] as? Int), try #require(answer.json?["duplicate"] as? Bool), answer.text)
        }
        let a1 = try post(tenantA), a2 = try post(tenantA)
        let b1 = try post(tenantB), b2 = try post(tenantB)
        let p1 = try post(plain), p2 = try post(plain)
        #expect(!a1.duplicate && a2.duplicate && a2.id == a1.id, "within namespace A: \(a1), \(a2)")
        #expect(!b1.duplicate && b2.duplicate && b2.id == b1.id, "within namespace B: \(b1), \(b2)")
        #expect(!p1.duplicate && p2.duplicate && p2.id == p1.id, "without a namespace: \(p1), \(p2)")
        #expect(Set([a1.id, b1.id, p1.id]).count == 3, "three tenants, three reports")
        // B's answers name B's report only, never A's id.
        #expect(!b1.text.contains("\(a1.id)") && !b2.text.contains("\(a1.id)"), "\(b1.text)")

        // By plain SQL: one row per namespace holding the digest of the bytes sent.
        let digest = try sha256sum(bytes)
        let rows = try sqlite(h.dbPath, "SELECT id, ifnull(namespace, '-') AS ns FROM reports WHERE digest = '\(digest)' ORDER BY id")
        #expect(rows.map { $0["ns"] as? String } == ["tenant-a", "tenant-b", "-"], "\(rows)")
        #expect(rows.map { $0["id"] as? Int } == [a1.id, b1.id, p1.id])
        #expect(Self.healthy(server))
    }

    // MARK: F9

    @Test func aWorkerIdBelongsToTheTokenThatFirstConnectedIt() throws {
        let h = try Harness()
        let owner = try h.token("worker"), intruder = try h.token("worker")
        let server = try h.startServer(["--workers", "0"])
        let hello = try RemoteProtocolTests.json(RemoteProtocolTests.hello(version: 2))
        let id = try #require(RemoteProtocolTests.hello(version: 2)["workerId"] as? String)

        #expect(try server.curl("POST", "/api/v1/workers/connect", token: owner, body: hello).status == 200)
        // Another token: refused at connect, and on every route of that worker id.
        let taken = try server.curl("POST", "/api/v1/workers/connect", token: intruder, body: hello)
        #expect(taken.status == 403, "\(taken)")
        #expect((taken.json?["error"] as? String)?.contains("worker id \(id) belongs to the token that first connected it") == true, "\(taken)")
        let claim = RemoteProtocolTests.bundle([try RemoteProtocolTests.json(RemoteProtocolTests.claim(maxJobs: 0))])
        let heartbeat = try RemoteProtocolTests.json(["leases": [Any](), "status": ["busy": 0, "cacheBytes": 0, "fetches": 0], "release": [Any]()])
        let result = try RemoteProtocolTests.json(["lease": ["jobId": 1, "leaseToken": 1], "reportId": 1, "reply": ""])
        for (route, body, headers) in [
            ("claim", claim, [RemoteProtocolTests.framesType]), ("heartbeat", heartbeat, []), ("result", result, []),
        ] {
            let answer = try server.curl("POST", "/api/v1/workers/\(id)/\(route)", token: intruder, body: body, headers: headers)
            #expect(answer.status == 403, "\(route) by another token: \(answer)")
        }
        // The owner goes on: a claim (nothing queued, no wait) and a reconnect.
        let owned = try server.curl("POST", "/api/v1/workers/\(id)/claim", token: owner, body: claim, headers: [RemoteProtocolTests.framesType])
        #expect(owned.status == 204, "\(owned)")
        #expect(try server.curl("POST", "/api/v1/workers/connect", token: owner, body: hello).status == 200)
        // The other token connects a worker id of its own.
        var own = RemoteProtocolTests.hello(version: 2)
        own["workerId"] = "intruder-own-1"
        #expect(try server.curl("POST", "/api/v1/workers/connect", token: intruder, body: try RemoteProtocolTests.json(own)).status == 200)
        #expect(Self.healthy(server))

        // A restarted master still knows whose id it is: the first to reconnect does not win it.
        server.signal(SIGTERM)
        #expect(try server.waitForExit() == 0)
        let restarted = try h.startServer(["--workers", "0"], log: "restarted")
        let raced = try restarted.curl("POST", "/api/v1/workers/connect", token: intruder, body: hello)
        #expect(raced.status == 403, "after a restart: \(raced)")
        let result403 = try restarted.curl("POST", "/api/v1/workers/\(id)/result", token: intruder, body: result)
        #expect(result403.status == 403, "a result for the id after a restart: \(result403)")
        #expect(try restarted.curl("POST", "/api/v1/workers/connect", token: owner, body: hello).status == 200)
        // By plain SQL: the id's owner is the first token.
        let ownerId = try #require(owner.split(separator: "_").dropFirst().first.flatMap { Int($0) })
        #expect(try sqliteInt(h.dbPath, "SELECT token_id FROM worker_owners WHERE worker_id = '\(id)'") == ownerId)
        #expect(Self.healthy(restarted))
    }

    // MARK: F10 and HEAD

    /// HEAD requests by a raw socket (`Connection: close`): status, headers and how many bytes
    /// followed the headers (a HEAD answer has none).
    static func rawHead(_ server: ServerProcess, _ requests: [(path: String, headers: [String])]) throws -> [(status: Int, headers: [String: String], bodyBytes: Int)] {
        let script = """
            import json, socket, sys
            port = int(sys.argv[1]); out = []
            for line in sys.stdin.read().splitlines():
                path, *extra = line.split("\\t")
                s = socket.create_connection(("127.0.0.1", port), timeout=60)
                head = "HEAD %s HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\nConnection: close\\r\\n" % (path, port)
                s.sendall((head + "".join(h + "\\r\\n" for h in extra) + "\\r\\n").encode())
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk: break
                    data += chunk
                s.close()
                top, _, rest = data.partition(b"\\r\\n\\r\\n")
                lines = top.decode("latin-1").split("\\r\\n")
                fields = {}
                for l in lines[1:]:
                    k, _, v = l.partition(":"); fields[k.strip().lower()] = v.strip()
                out.append({"status": int(lines[0].split()[1]), "headers": fields, "rest": len(rest)})
            print(json.dumps(out))
            """
        let input = requests.map { ([$0.path] + $0.headers).joined(separator: "\t") }.joined(separator: "\n")
        let out = try runProcess("python3", ["-c", script, "\(server.port)"], stdin: Data(input.utf8), timeout: 300)
        try #require(out.succeeded, "\(out.summary)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]])
        return rows.map { ($0["status"] as? Int ?? 0, $0["headers"] as? [String: String] ?? [:], $0["rest"] as? Int ?? -1) }
    }

    @Test func headAnswersWhereGetDoesAndAuthenticatedAnswersArePrivate() throws {
        let h = try Harness()
        let binary = try CrashFixture.shared.binary()
        #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, binary]).status == 0)
        let buildId = try #require(try readelfBuildID(binary)).lowercased()
        #expect(try h.stackline(["namespaces", "set-key", "head-ns"]).status == 0)
        let admin = try h.token("admin"), read = try h.token("read")
        let server = try h.startServer(["--workers", "1"])
        let posted = try server.curl("POST", "/api/v1/reports", token: admin, body: try CrashFixture.shared.report(symbolicate: "off"))
        let id = try #require(posted.json?["id"] as? Int, "\(posted)")
        try h.waitUntil("the report symbolicated") { try sqliteInt(h.dbPath, "SELECT count(*) FROM results") == 1 }
        let fingerprint = try #require(try sqlite(h.dbPath, "SELECT fingerprint FROM results").first?["fingerprint"] as? String)

        // Every GET of docs/openapi.yaml and every page of the web view, each answering 200.
        let openAPI = try String(contentsOfFile: packageRoot + "/docs/openapi.yaml", encoding: .utf8)
        var documented: [String] = []
        var current: String?
        for line in openAPI.split(separator: "\n") {
            if line.hasPrefix("  /"), line.hasSuffix(":") { current = String(line.dropFirst(2).dropLast()) }
            if line == "    get:", let current { documented.append(current) }
        }
        let filled: [String: String] = [
            "/api/v1/config": "/api/v1/config?namespace=head-ns", "/api/v1/status/{id}": "/api/v1/status/\(id)",
            "/api/v1/groups/{fingerprint}": "/api/v1/groups/\(fingerprint)", "/api/v1/reports/{id}": "/api/v1/reports/\(id)",
            "/buildid/{buildid}/debuginfo": "/buildid/\(buildId)/debuginfo", "/buildid/{buildid}/executable": "/buildid/\(buildId)/executable",
            "/buildid/{buildid}/section/{section}": "/buildid/\(buildId)/section/.text",
            "/api/v1/facets": "/api/v1/facets?key=os_version", "/api/v1/groups/{fingerprint}/facets": "/api/v1/groups/\(fingerprint)/facets?key=kind",
            "/api/v1/groups/{fingerprint}/history": "/api/v1/groups/\(fingerprint)/history",
        ]
        let api = try documented.map { path in try #require(filled[path] ?? (path.contains("{") ? nil : path), "no example for \(path)") }
        #expect(api.count >= 15, "\(documented)")
        let web = [
            "/", "/groups/\(fingerprint)", "/reports/\(id)", "/reports/\(id)/raw", "/reports/\(id)/apple.txt", "/reports/\(id)/text.txt",
            "/symbols", "/workers", "/releases",
        ]
        let open = ["/healthz", "/login", "/static/web.css"]

        // A page signed in with the session cookie, too: the other way a request authenticates.
        let login = try server.curl("POST", "/login", body: Data("token=\(read)".utf8))
        let cookie = String(try #require(login.headers["set-cookie"]).split(separator: ";")[0])
        let requests: [(path: String, headers: [String], authenticated: Bool)] =
            (api + web).map { ($0, ["Authorization: Bearer \(admin)"], !["/healthz", "/readyz"].contains($0)) }
            + web.map { ($0, ["Cookie: \(cookie)"], true) } + open.map { ($0, [], false) }
        let heads = try Self.rawHead(server, requests.map { ($0.path, $0.headers) })
        for (request, head) in zip(requests, heads) {
            let get = try server.curl("GET", request.path, headers: request.headers)
            let label = "\(request.path) (\(request.headers.first?.prefix(13) ?? "no token"))"
            #expect(get.status == 200, "GET \(label): \(get)")
            #expect(head.status == get.status, "HEAD \(label): \(head.status), GET: \(get.status)")
            #expect(head.bodyBytes == 0, "HEAD \(label) sent \(head.bodyBytes) bytes of body")
            // `/metrics` counts the requests themselves: its length changes between two asks.
            if let length = get.headers["content-length"], request.path != "/metrics" {
                #expect(head.headers["content-length"] == length, "HEAD \(label): Content-Length \(head.headers["content-length"] ?? "none"), GET: \(length)")
            }
            // curl -I, the way monitors ask.
            let curlHead = try runProcess("curl", ["-sS", "-I", "-o", "/dev/null", "-w", "%{http_code}"] + request.headers.flatMap { ["-H", $0] } + [server.baseURL + request.path])
            #expect(curlHead.stdout == "\(get.status)", "curl -I \(label): \(curlHead.stdout)")
            guard request.authenticated else { continue }
            for (method, value) in [("GET", get.headers["cache-control"]), ("HEAD", head.headers["cache-control"])] {
                let directives = Set((value ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
                #expect(
                    !directives.contains("public") && (directives.contains("private") || directives.contains("no-store")),
                    "\(method) \(label): Cache-Control \(value ?? "absent")")
            }
        }
        #expect(Self.healthy(server))
    }
}
