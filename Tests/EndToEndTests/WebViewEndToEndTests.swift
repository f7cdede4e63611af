import Foundation
import ReportModel
import TestSupport
import Testing

/// A C++ program whose names are hostile: the source file is called
/// `evil"><img src=x onerror=alert(1)><script>.cpp` and the crashing function is
/// `boom<script>(int*)` (a template over a struct named `script`), its first instruction inlined
/// from `deref`. Real DWARF, so the names reach the pages through real symbolication.
struct HostileNamesProgram {
    var binary: String
    var buildID: String
    var boom: UInt64
    var main: UInt64
    static let fileName = "evil\"><img src=x onerror=alert(1)><script>.cpp"
    static let threadName = "\"><img src=x onerror=alert(1)><script>alert(2)</script>"
    static let otherThread = "<script>alert(3)</script>"

    static func build() throws -> HostileNamesProgram {
        let dir = try makeTemporaryDirectory(prefix: "hostile")
        let source = dir + "/" + fileName
        try """
            struct script {};
            static inline __attribute__((always_inline)) int deref(int *p) { return *p * 3; }
            template <typename T> __attribute__((noinline)) int boom(int *p) { return deref(p) + 1; }
            int main(int argc, char **) { return boom<script>(argc > 5 ? &argc : nullptr); }

            """.write(toFile: source, atomically: true, encoding: .utf8)
        let binary = dir + "/evil"
        try runChecked(try findTool("g++"), ["-g", "-O1", source, "-o", binary])
        guard let buildID = try readelfBuildID(binary) else { throw TestSupportError("no build-id in \(binary)") }
        var boom: UInt64?, main: UInt64?
        for line in try runChecked(try findTool("nm"), ["--defined-only", binary]).stdout.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 3, let address = UInt64(parts[0], radix: 16) else { continue }
            if parts[2] == "_Z4boomI6scriptEiPi" { boom = address }
            if parts[2] == "main" { main = address }
        }
        guard let boom, let main else { throw TestSupportError("nm found no boom<script> or main in \(binary)") }
        return HostileNamesProgram(binary: binary, buildID: buildID, boom: boom, main: main)
    }

    /// A Swift-backtrace JSON crash report of this program loaded at `load`: the crashed
    /// thread in `boom<script>` called from `main`, and a second thread, both with hostile names.
    func report(load: UInt64) throws -> Data {
        func hex(_ v: UInt64) -> String { "\"0x" + String(v, radix: 16) + "\"" }
        func json(_ s: String) throws -> String { String(decoding: try JSONEncoder().encode(s), as: UTF8.self) }
        let (thread, other, path) = (try json(Self.threadName), try json(Self.otherThread), try json(binary))
        return Data("""
            {"timestamp": "2026-11-26T17:00:00Z", "kind": "crashReport", "description": "Bad pointer dereference",
             "faultAddress": "0x0", "platform": "Linux", "architecture": "x86_64",
             "threads": [
              {"name": \(thread), "crashed": true, "frames": [
                {"kind": "programCounter", "address": \(hex(load + boom + 1))},
                {"kind": "returnAddress", "address": \(hex(load + main + 8))}]},
              {"name": \(other), "frames": [{"kind": "programCounter", "address": \(hex(load + main + 2))}]}],
             "images": [{"name": "evil", "path": \(path), "buildId": "\(buildID)", "baseAddress": \(hex(load))}]}
            """.utf8)
    }
}

/// The SDK's lag report with a thread-profile tree over the LagProgram's functions (the
/// seed's shape: func1 → func2 → func3 → func4 → func5…func8).
func profileLagReport(_ p: LagProgram, load: UInt64, version: String) -> Data {
    // Costs in ms: func6 takes half of func4's time, enough to be the lag key's node
    // (docs/grouping.md, "Lag keys"), so the key is func1 → func2 → func3 → func4 → func6.
    let nodes: [(Int, Int, Int, String)] = [
        (0, 8, 400, "func1"), (1, 8, 400, "func2"), (2, 8, 400, "func3"), (3, 8, 400, "func4"), (4, 1, 50, "func5"),
        (4, 2, 200, "func6"), (4, 1, 50, "func7"), (4, 1, 50, "func8"),
    ]
    let json = nodes.map { depth, count, cost, name in
        #"{"depth": \#(depth), "count": \#(count), "costTime": \#(cost), "methodAddress": "0x\#(String(load + p.functions[name, default: 0] + 1, radix: 16))"}"#
    }
    return Data("""
        {"type": "lag", "app": {"name": "lagdemo", "version": "\(version)"},
         "dyld_images": [{"name": "\(p.binary)", "uuid": "\(p.buildID)", "base_addr": "0x\(String(load, radix: 16))"}],
         "thread_profile": [\(json.joined(separator: ",\n"))]}
        """.utf8)
}

/// What the browser script recorded about one page (scripts/web-browser.py).
struct LoadedPage {
    var name: String
    var facts: [String: Any]
    var html: String

    var url: String { facts["url"] as? String ?? "" }
    var elements: [[String: Any]] { facts["elements"] as? [[String: Any]] ?? [] }
    var console: [String] { facts["console"] as? [String] ?? [] }
    func text(_ key: String) -> String? { elements.first { $0["k"] as? String == key }?["text"] as? String }
    func elements(prefix: String) -> [[String: Any]] { elements.filter { ($0["k"] as? String)?.hasPrefix(prefix) == true } }
}

/// The web view in a real browser: a real `stackline serve` with a worker holds real
/// symbolicated crashes, a real hang and a report with hostile names; headless Chromium signs
/// in through the form and loads every page; the DOM is compared with the API and the CLI.
@Suite(.serialized) struct WebViewEndToEndTests {
    static let artifacts = TestPaths.packageRoot + "/.build/test-artifacts/web"

    /// Runs scripts/web-browser.py for `pages` (NAME=PATH) and reads what it wrote (into `artifacts`).
    func load(
        _ server: ServerProcess, token: String, _ pages: [String], in dir: String, artifacts: String = WebViewEndToEndTests.artifacts
    ) throws -> [String: LoadedPage] {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let tokenFile = dir + "/token"
        try token.write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let out = try runProcess(
            "/usr/bin/python3",
            [TestPaths.packageRoot + "/scripts/web-browser.py", "--base", server.baseURL, "--token-file", tokenFile, "--out", artifacts]
                + pages, timeout: 300)
        guard out.status == 0 else { throw TestSupportError("web-browser.py failed: \(out.summary)") }
        var loaded: [String: LoadedPage] = [:]
        for spec in pages {
            let name = String(spec.split(separator: "=")[0])
            let facts = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(artifacts)/\(name).json")))
            loaded[name] = LoadedPage(
                name: name, facts: facts as? [String: Any] ?? [:],
                html: try String(contentsOfFile: "\(artifacts)/\(name).html", encoding: .utf8))
        }
        return loaded
    }

    @Test func everyPageInHeadlessChromiumMatchesTheAPIAndEscapesHostileNames() throws {
        let h = try Harness()
        let lag = try LagProgram.shared.get()
        let hostile = try HostileNamesProgram.build()
        for binary in [try CrashFixture.shared.binary(), lag.binary, hostile.binary] {
            let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, binary])
            #expect(added.status == 0, "\(added.stderr)")
        }
        // Crashes over three versions: `index` in 1.0 and 1.2 but not 1.1 (a regression),
        // `segv` in 1.0 and 1.1; a hang; the hostile report.
        let index = try CrashFixture.shared.report(mode: "index")
        let segv = try CrashFixture.shared.report(mode: "segv")
        var ids: [String: [Int64]] = [:]
        func submit(_ reports: [Data], version: String, as key: String) throws {
            let paths = try h.write(reports, subdir: "in-\(key)-\(version)")
            let out = try h.stackline(["submit", "--version", version] + paths)
            #expect(out.status == 0, "\(out.stderr)")
            ids[key, default: []] += out.stdout.split(separator: "\n").compactMap { Int64($0.split(separator: "\t").first ?? "") }
        }
        try submit([variant(of: index, number: 1), variant(of: index, number: 2), variant(of: segv, number: 3)], version: "1.0", as: "v1.0")
        try submit([variant(of: segv, number: 4)], version: "1.1", as: "v1.1")
        try submit([variant(of: index, number: 5)], version: "1.2", as: "v1.2")
        try submit([profileLagReport(lag, load: 0x5555_0000_0000, version: "1.2")], version: "1.2", as: "hang")
        // The seed's hang as 8 stack samples (no profile tree): its flame graph merges them.
        try submit([lag.sdkLagReport(load: 0x5600_1234_5000, version: "1.2")], version: "1.2", as: "samples")
        try submit([try hostile.report(load: 0x5600_0000_0000)], version: "6.6", as: "hostile")
        let hangId = try #require(ids["hang"]?.first)
        let hostileId = try #require(ids["hostile"]?.first)
        let crashId = try #require(ids["v1.0"]?.first)
        let samplesId = try #require(ids["samples"]?.first)

        let read = try h.token("read")
        let server = try h.startServer(["--workers", "1"])
        try h.waitUntil("every report symbolicated", timeout: 300) {
            try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state = 'done'") == 8
        }

        // A remote worker on loopback (its name hostile too), for the workers page.
        let workerToken = try h.token("worker")
        let remote = Process()
        remote.executableURL = URL(fileURLWithPath: TestPaths.worker)
        remote.arguments = [
            "--connect", server.baseURL, "--slots", "2", "--cache", h.dir.file("worker-cache"), "--name", "build<script>box",
        ]
        remote.environment = h.environment.merging(["STACKLINE_TOKEN": workerToken]) { $1 }
        remote.standardOutput = FileHandle.nullDevice
        remote.standardError = FileHandle.nullDevice
        try remote.run()
        defer { if remote.isRunning { kill(remote.processIdentifier, SIGKILL) } }
        var apiWorkers: [[String: Any]] = []
        try h.waitUntil("the remote worker to connect", timeout: 120) {
            apiWorkers = try server.curl("GET", "/api/v1/workers", token: read).json?["workers"] as? [[String: Any]] ?? []
            return !apiWorkers.isEmpty
        }

        // Expected values from the API and the CLI, never from the pages.
        let groupsAnswer = try server.curl("GET", "/api/v1/groups?limit=100", token: read)
        #expect(groupsAnswer.status == 200)
        let apiGroups = try #require(try JSONSerialization.jsonObject(with: groupsAnswer.body) as? [[String: Any]])
        #expect(apiGroups.count == 5, "\(groupsAnswer)")
        func group(containing reportId: Int64) throws -> [String: Any] {
            let doc = try reportJSON(h, reportId)
            let fp = try #require((doc["group"] as? [String: Any])?["fingerprint"] as? String)
            return try #require(apiGroups.first { $0["fingerprint"] as? String == fp })
        }
        let indexGroup = try group(containing: crashId)
        let hangGroup = try group(containing: hangId)
        let hostileGroup = try group(containing: hostileId)
        let indexFP = try #require(indexGroup["fingerprint"] as? String)

        try? FileManager.default.removeItem(atPath: Self.artifacts)
        try FileManager.default.createDirectory(atPath: Self.artifacts, withIntermediateDirectories: true)
        let pages = try load(server, token: read, [
            "groups=/", "groups-crashes=/?kind=crash", "group=/groups/\(indexFP)",
            "hang-group=/groups/\(try #require(hangGroup["fingerprint"] as? String))",
            "report=/reports/\(crashId)", "hang=/reports/\(hangId)", "hang-samples=/reports/\(samplesId)", "hostile=/reports/\(hostileId)",
            "hostile-group=/groups/\(try #require(hostileGroup["fingerprint"] as? String))",
            "symbols=/symbols", "workers=/workers", "groups-p1=/?per_page=2", "groups-p2=/?per_page=2&page=2",
            "groups-v11=/?version=1.1", "groups-since=/?since=1h&kind=lag",
            "anonymous-groups=!/", "anonymous-report=!/reports/\(crashId)", "anonymous-symbols=!/symbols",
        ], in: h.dir.file("browser"))
        func page(_ name: String) throws -> LoadedPage { try #require(pages[name], "page \(name) not loaded") }

        // Every page: only our own script, no injected element or handler, no CSP violation.
        for p in pages.values {
            #expect(p.facts["images"] as? Int == 0, "\(p.name): an <img> element in the DOM")
            #expect(p.facts["scripts"] as? [String?] == ["/static/web.js"], "\(p.name): scripts \(String(describing: p.facts["scripts"]))")
            #expect(p.facts["inlineHandlers"] as? Int == 0, "\(p.name): an on* attribute in the DOM")
            #expect(!p.console.contains { $0.contains("Content Security Policy") || $0.contains("Refused") }, "\(p.name): \(p.console)")
        }

        // Groups: titles and counts equal the API's, most frequent first.
        let groups = try page("groups")
        for g in apiGroups {
            let fp = try #require(g["fingerprint"] as? String)
            #expect(groups.text("group-title:\(fp)") == g["title"] as? String, "title of \(fp)")
            #expect(groups.text("group-count:\(fp)") == "\(g["count"] as? Int ?? -1)", "count of \(fp)")
        }
        #expect(groups.elements(prefix: "group-count:").compactMap { Int($0["text"] as? String ?? "") }
            == apiGroups.compactMap { $0["count"] as? Int })
        // The kind filter: only the crash groups, as `GET /api/v1/groups?kind=crash` lists them.
        let crashGroups = try #require(
            try JSONSerialization.jsonObject(with: server.curl("GET", "/api/v1/groups?kind=crash&limit=100", token: read).body) as? [[String: Any]])
        #expect(Set(try page("groups-crashes").elements(prefix: "group-title:").compactMap { $0["text"] as? String })
            == Set(crashGroups.compactMap { $0["title"] as? String }))

        // Filters and paging give what the API gives for the same query.
        func apiList(_ query: String) throws -> [[String: Any]] {
            try #require(try JSONSerialization.jsonObject(with: server.curl("GET", "/api/v1/groups?" + query, token: read).body) as? [[String: Any]])
        }
        func shown(_ name: String) throws -> [String] {
            try page(name).elements(prefix: "group-title:").compactMap { ($0["k"] as? String)?.replacingOccurrences(of: "group-title:", with: "") }
        }
        func counts(_ name: String) throws -> [String] { try page(name).elements(prefix: "group-count:").compactMap { $0["text"] as? String } }
        for (name, query) in [("groups-v11", "version=1.1"), ("groups-since", "since=1h&kind=lag")] {
            let expected = try apiList(query + "&limit=100")
            #expect(!expected.isEmpty)
            #expect(try shown(name) == expected.compactMap { $0["fingerprint"] as? String }, "\(name)")
            #expect(try counts(name) == expected.map { "\($0["count"] as? Int ?? -1)" }, "\(name)")
        }
        let order = apiGroups.compactMap { $0["fingerprint"] as? String }
        #expect(try shown("groups-p1") == Array(order[0..<2]))
        #expect(try shown("groups-p2") == Array(order[2..<4]))
        #expect(try page("groups-p1").text("next-page") != nil)
        #expect((try page("groups-p2").text("next-page") != nil) == (order.count > 4))
        #expect(try page("groups-p2").text("previous-page") != nil)

        // A group: its count, bars per version equal to the API's, first version, regression.
        let groupPage = try page("group")
        #expect(groupPage.text("group-count") == "\(indexGroup["count"] as? Int ?? -1)")
        let versions = try #require(indexGroup["versions"] as? [String: Int])
        #expect(versions == ["1.0": 2, "1.2": 1])
        for (version, count) in versions {
            #expect(groupPage.elements.first { $0["k"] as? String == "version-bar:\(version)" }?["count"] as? String == "\(count)")
        }
        // 1.1 lies between the group's versions and had none of its reports: an empty bar.
        #expect(groupPage.elements.first { $0["k"] as? String == "version-bar:1.1" }?["count"] as? String == "0")
        #expect(groupPage.text("first-version") == "1.0")
        #expect(groupPage.text("regression") != nil, "the index crash is absent in 1.1 and back in 1.2")
        #expect(try page("hang-group").text("regression") == nil)
        let groupDetail = try #require(try server.curl("GET", "/api/v1/groups/\(indexFP)", token: read).json)
        let fingerprintFrames = try #require(groupDetail["frames"] as? [String])
        #expect(groupPage.elements(prefix: "fingerprint-frame:").compactMap { $0["text"] as? String } == fingerprintFrames)

        // A report: the same frames, thread by thread, as `stackline report --json`.
        for (name, id) in [("report", crashId), ("hostile", hostileId)] {
            let p = try page(name)
            let doc = try reportJSON(h, id)
            let threads = try #require(doc["threads"] as? [[String: Any]])
            #expect(!threads.isEmpty)
            for thread in threads {
                let t = try #require(thread["index"] as? Int)
                let frames = try #require(thread["frames"] as? [[String: Any]])
                let expected = frames.map { ($0["function"] ?? $0["symbol"] ?? $0["address"]) as? String ?? "" }
                let shown = p.elements.filter { ($0["k"] as? String)?.range(of: #"^frame:\#(t):\d+:function$"#, options: .regularExpression) != nil }
                    .compactMap { $0["text"] as? String }
                #expect(shown == expected, "\(name) thread \(t)")
                // Inline levels are rows of their own, marked as such.
                let rows = p.elements.filter { ($0["k"] as? String)?.range(of: #"^frame:\#(t):\d+$"#, options: .regularExpression) != nil }
                #expect(rows.map { ($0["cls"] as? String ?? "").split(separator: " ").contains("inlined") }
                    == frames.map { $0["inlined"] as? Bool ?? false }, "\(name) thread \(t)")
                let statuses = p.elements.filter { ($0["k"] as? String)?.range(of: #"^frame:\#(t):\d+:status$"#, options: .regularExpression) != nil }
                #expect(statuses.compactMap { ($0["cls"] as? String)?.split(separator: " ").last.map(String.init) }
                    == frames.map { $0["status"] as? String ?? "" }, "\(name) thread \(t) statuses")
            }
            // Crashed thread first.
            let crashed = try #require(threads.first { $0["crashed"] as? Bool == true }?["index"] as? Int)
            let positions = threads.compactMap { $0["index"] as? Int }.compactMap { p.html.range(of: "data-k=\"thread:\($0)\"")?.lowerBound }
            #expect(positions.count == threads.count)
            #expect(p.html.range(of: "data-k=\"thread:\(crashed)\"")?.lowerBound == positions.min())
        }

        // The hostile report's crashing frame has an inline level (deref in boom<script>).
        let hostileThreads = try #require(try reportJSON(h, hostileId)["threads"] as? [[String: Any]])
        #expect(hostileThreads.contains { ($0["frames"] as? [[String: Any]] ?? []).contains { $0["inlined"] as? Bool == true } })

        // Hostile names are text in the DOM, never markup: the browser shows them verbatim.
        let hostilePage = try page("hostile")
        #expect(hostilePage.text("report-app") == HostileNamesProgram.threadName)
        let functions = hostilePage.elements(prefix: "frame:0:").filter { ($0["k"] as? String)?.hasSuffix(":function") == true }
            .compactMap { $0["text"] as? String }
        #expect(functions.contains { $0.contains("boom<script>") }, "\(functions)")
        #expect(hostilePage.text("frame:0:0:location")?.contains(HostileNamesProgram.fileName) == true,
                "\(String(describing: hostilePage.text("frame:0:0:location")))")
        #expect(hostilePage.html.contains("Thread 0 — " + HTMLText.escaped(HostileNamesProgram.threadName)))
        #expect(hostilePage.html.contains("Thread 1 — " + HTMLText.escaped(HostileNamesProgram.otherThread)))
        let hostileGroupPage = try page("hostile-group")
        #expect(hostileGroupPage.text("group-title") == hostileGroup["title"] as? String)
        #expect((hostileGroup["title"] as? String)?.contains("<script>") == true)
        #expect(try page("groups").text("group-title:\(hostileGroup["fingerprint"] as? String ?? "")") == hostileGroup["title"] as? String)

        // The hang: one rectangle per profile node, widths proportional to the counts.
        let hangDoc = try reportJSON(h, hangId)
        let profile = try #require((hangDoc["lag"] as? [String: Any])?["profile"] as? [[String: Any]])
        #expect(profile.count == 8)
        let rects = try page("hang").elements(prefix: "flame-node:").filter { $0["tag"] as? String == "rect" }
        #expect(rects.count == profile.count)
        let counts = profile.compactMap { ($0["node"] as? [String: Any])?["count"] as? Int ?? $0["count"] as? Int }
        #expect(counts == [8, 8, 8, 8, 1, 2, 1, 1], "\(profile.first ?? [:])")
        let total = Double(counts[0])
        for (i, rect) in rects.enumerated() {
            let width = try #require(Double(rect["width"] as? String ?? ""))
            #expect(abs(width - 1200 * Double(counts[i]) / total) < 0.01, "node \(i): width \(width)")
            #expect(rect["count"] as? String == "\(counts[i])")
        }
        // The lag key's frames are marked.
        let hangFrames = try #require(hangGroup["fingerprint"] as? String).isEmpty ? [] : try #require(
            try server.curl("GET", "/api/v1/groups/\(hangGroup["fingerprint"] as! String)", token: read).json?["frames"] as? [String])
        let marked = rects.filter { ($0["cls"] as? String)?.split(separator: " ").contains("key") == true }
            .compactMap { $0["label"] as? String }
        #expect(Set(marked) == ["func1", "func2", "func3", "func4", "func6"], "\(marked) vs \(hangFrames)")
        #expect(marked.allSatisfy { label in hangFrames.contains { $0.hasSuffix("!" + label) } }, "\(marked) vs \(hangFrames)")

        // The sampled hang: the samples merged root first, one rectangle per distinct path
        // (computed here from `report --json`), each as wide as the samples through it.
        let samplesDoc = try reportJSON(h, samplesId)
        let samples = try #require((samplesDoc["lag"] as? [String: Any])?["samples"] as? [[String: Any]])
        #expect(samples.count == 8)
        var pathCounts: [[String]: Int] = [:]
        for sample in samples {
            var rawFrames: [(index: Int, name: String)] = []
            for frame in sample["frames"] as? [[String: Any]] ?? [] {
                let index = frame["index"] as? Int ?? -1
                let name = (frame["function"] ?? frame["symbol"] ?? frame["address"]) as? String ?? "?"
                // Inline levels share their raw frame's index, innermost first: keep the outermost.
                if rawFrames.last?.index == index { rawFrames[rawFrames.count - 1].name = name } else { rawFrames.append((index, name)) }
            }
            let rootFirst = rawFrames.reversed().map(\.name)
            for depth in 1...rootFirst.count {
                let path = Array(rootFirst.prefix(depth))
                pathCounts[path, default: 0] += 1
            }
        }
        let sampledRects = try page("hang-samples").elements(prefix: "flame-node:").filter { $0["tag"] as? String == "rect" }
        #expect(sampledRects.count == pathCounts.count)
        #expect(try page("hang-samples").elements.first { $0["k"] as? String == "flame" }?["text"] != nil)
        for rect in sampledRects {
            let label = rect["label"] as? String ?? ""
            let count = try #require(Int(rect["count"] as? String ?? ""))
            let width = try #require(Double(rect["width"] as? String ?? ""))
            #expect(abs(width - 1200 * Double(count) / Double(samples.count)) < 0.01, "\(label)")
            #expect(pathCounts.contains { $0.key.last == label && $0.value == count }, "\(label) × \(count)")
        }
        #expect(pathCounts.values.sorted() == sampledRects.compactMap { Int($0["count"] as? String ?? "") }.sorted())

        // Hovering func6 (2 of 8 samples) shows its frame and share, through web.js under the CSP.
        let hover = try #require(try page("hang").facts["hover"] as? [String: Any])
        #expect(hover["k"] as? String == "flame-node:5")
        #expect(hover["info"] as? String == "func6 — 2 samples, 25% of all")

        // Symbols and workers.
        let missing = try #require(
            try JSONSerialization.jsonObject(with: server.curl("GET", "/api/v1/symbols/missing", token: read).body) as? [[String: Any]])
        for m in missing {
            let id = try #require(m["buildId"] as? String)
            #expect(try page("symbols").text("missing-count:\(id)") == "\(m["reportCount"] as? Int ?? -1)")
        }
        let workers = try page("workers")
        #expect(workers.text("local-workers") != nil)
        for w in apiWorkers {
            let id = try #require(w["id"] as? String)
            #expect(workers.text("worker-busy:\(id)") == "\(w["busy"] as? Int ?? -1) / \(w["slots"] as? Int ?? -1)")
            #expect(workers.text("worker-name:\(id)") == w["name"] as? String)
        }
        #expect(apiWorkers.first?["name"] as? String == "build<script>box")

        // Without a token: the sign-in form, in the browser (after a 303) and by curl.
        for name in ["anonymous-groups", "anonymous-report", "anonymous-symbols"] {
            let url = try page(name).url
            #expect(url.hasPrefix(server.baseURL + "/login"), "\(name) ended at \(url)")
        }
        for path in ["/", "/groups/\(indexFP)", "/reports/\(crashId)", "/reports/\(crashId)/raw", "/symbols", "/workers"] {
            let answer = try server.curl("GET", path)
            #expect(answer.status == 303, "\(path): \(answer)")
            // To the form, with the page to come back to (the path only, percent-encoded).
            let back = path.addingPercentEncoding(withAllowedCharacters: CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~")))!
            #expect(answer.headers["location"] == (path == "/" ? "/login" : "/login?next=\(back)"), "\(path)")
            #expect(answer.headers["content-security-policy"]?.contains("script-src 'self'") == true)
            let forged = try server.curl("GET", path, headers: ["Cookie: stackline_session=v1.1.99999999999999.00"])
            #expect(forged.status == 303, "a forged cookie: \(forged)")
            // A bearer header works too, and every response carries the CSP.
            let withToken = try server.curl("GET", path, token: read)
            #expect(withToken.status == 200, "\(path): \(withToken)")
            #expect(withToken.headers["content-security-policy"] == "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
            #expect(withToken.headers["x-content-type-options"] == "nosniff")
        }
        // Downloads: the exact bytes submitted, and the Apple text the API renders.
        let raw = try server.curl("GET", "/reports/\(hostileId)/raw", token: read)
        #expect(raw.body == (try hostile.report(load: 0x5600_0000_0000)))
        let apple = try server.curl("GET", "/reports/\(crashId)/apple.txt", token: read)
        #expect(apple.text == (try server.curl("GET", "/api/v1/reports/\(crashId)?format=apple", token: read).text))

        // Sign-in by curl. Which tokens sign in, the cookie's attributes, the Origin check, where
        // `next` may lead and the end of a session with its token: ServerTests' WebRouteTests
        // .signInSetsASessionCookieThatEndsWithTheToken. Here: neither the token nor the session
        // reaches the server's log.
        let login = try server.curl("POST", "/login", body: Data("token=\(read)".utf8))
        #expect(login.status == 303)
        let cookie = try #require(login.headers["set-cookie"])
        let session = String(cookie.split(separator: ";")[0])
        #expect(try server.curl("GET", "/", headers: ["Cookie: \(session)"]).status == 200)
        #expect(!server.log.contains(read.suffix(64)))
        #expect(!server.log.contains(String(session.split(separator: "=")[1])))

        server.signal(SIGTERM)
        #expect(try server.waitForExit() == 0)
    }
}

/// `stackline report ID --json` as an object.
func reportJSON(_ h: Harness, _ id: Int64) throws -> [String: Any] {
    let out = try h.stackline(["report", "\(id)", "--json"])
    guard out.status == 0, let doc = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any] else {
        throw TestSupportError("report \(id) --json: \(out.summary)")
    }
    return doc
}

/// How Chromium serializes text in a DOM dump (an independent statement of the rule, not the
/// server's escaper): `&`, `<`, `>` as references; quotes stay in text.
enum HTMLText {
    static func escaped(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
