import Foundation
import TestSupport
import Testing

/// `serve --symbol-source`: a real upstream, elfutils' own `debuginfod` server, started here on
/// a folder of compiled programs, with two bad sources asked before it: one that is down and
/// one that answers every id with another build's file.
///
/// Oracles: the Swift runtime's own symbolication of the same crash (function names),
/// debuginfod's `/metrics` (how many files it served), the wrong source's own request log,
/// sqlite3 (the answers recorded), and the files on disk (what the cache holds).
@Suite(.serialized) struct SymbolSourcesTests {
    /// elfutils' debuginfod over `folder`, on a free port. It listens on every interface (it
    /// has no option to bind one); the test only ever connects to 127.0.0.1. The environment
    /// has no DEBUGINFOD_URLS, so it never asks anyone upstream itself.
    final class Upstream {
        let process = Process()
        let port: Int
        let log: String
        var url: String { "http://127.0.0.1:\(port)" }

        init(folder: String, dir: TempDirectory) throws {
            port = try freeLoopbackPort()
            log = dir.file("debuginfod.log")
            FileManager.default.createFile(atPath: log, contents: nil)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/debuginfod")
            process.arguments = ["-F", "-p", "\(port)", "-d", dir.file("debuginfod.sqlite"), "-t", "0", "-g", "0", "-v", folder]
            var environment = ProcessInfo.processInfo.environment
            environment["DEBUGINFOD_URLS"] = nil
            process.environment = environment
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
        }

        /// A counter of debuginfod's `/metrics` (0 when absent).
        func metric(_ line: String) throws -> Int {
            let text = try HTTPAnswer.curl("GET", url + "/metrics").text
            return text.split(separator: "\n").first { $0.hasPrefix(line + " ") }
                .flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? 0
        }

        /// debuginfo files it has served whole (200).
        func served() throws -> Int { try metric(#"http_responses_transfer_bytes_count{code="200",type="debuginfo"}"#) }

        // SIGKILL: Foundation's terminate() left these children running on this machine.
        deinit {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    /// A source that sends `file` for every build id and logs each request path.
    final class WrongFileSource {
        let process = Process()
        let port: Int
        let requests: String
        var url: String { "http://127.0.0.1:\(port)" }

        init(serving file: String, dir: TempDirectory) throws {
            requests = dir.file("wrong-source-requests.log")
            let portFile = dir.file("wrong-source-port")
            let script = """
                import http.server, sys
                body = open(sys.argv[1], 'rb').read()
                class H(http.server.BaseHTTPRequestHandler):
                    def do_GET(self):
                        seen = self.headers.get('X-Probe', '-') + (' authorization' if 'Authorization' in self.headers else '')
                        with open(sys.argv[2], 'a') as log: log.write(self.path + ' ' + seen + '\\n')
                        self.send_response(200)
                        self.send_header('Content-Length', str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                    def log_message(self, *a): pass
                s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
                open(sys.argv[3], 'w').write(str(s.server_address[1]))
                s.serve_forever()
                """
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = ["-c", script, file, requests, portFile]
            try process.run()
            let deadline = Date().addingTimeInterval(30)
            var port: Int?
            while port == nil, Date() < deadline {
                port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0) }
                if port == nil { Thread.sleep(forTimeInterval: 0.05) }
            }
            self.port = try #require(port, "the wrong-file source did not start")
        }

        var requestCount: Int {
            ((try? String(contentsOfFile: requests, encoding: .utf8)) ?? "").split(separator: "\n").count
        }

        // SIGKILL: Foundation's terminate() left these children running on this machine.
        deinit {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    @Test func aFileOnlyAnUpstreamDebuginfodHasIsFetchedOnceAndTheReportComesOutSymbolicated() throws {
        let h = try Harness()
        let demo = try CrashFixture.shared.binary()
        let demoID = try #require(try readelfBuildID(demo))
        let lag = try LagProgram.shared.get()
        let otherID = try #require(try readelfBuildID(lag.binary))

        // Upstream: debuginfod over a folder holding the demo program, and nothing in our store.
        let folder = h.dir.file("upstream")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: demo, toPath: folder + "/Demo")
        let upstream = try Upstream(folder: folder, dir: h.dir)
        try h.waitUntil("debuginfod to have scanned the demo", timeout: 120) {
            (try? HTTPAnswer.curl("GET", upstream.url + "/buildid/\(demoID)/debuginfo"))?.status == 200
        }
        let servedBefore = try upstream.served()
        let wrong = try WrongFileSource(serving: lag.binary, dir: h.dir)
        let down = try freeLoopbackPort()  // nothing listens there: connection refused

        // The first two from the sources file (the wrong one with a header of its own), then the command line's.
        let cache = h.dir.file("fetched")
        let sourcesFile = h.dir.file("sources.json")
        try Data(
            #"{"sources": [{"url": "http://127.0.0.1:\#(down)", "timeoutSeconds": 5}, {"url": "\#(wrong.url)", "headers": {"X-Probe": "from-the-file"}}]}"#.utf8
        ).write(to: URL(fileURLWithPath: sourcesFile))
        let server = try h.startServer([
            "--workers", "1", "--symbol-sources", sourcesFile, "--symbol-source", upstream.url, "--symbol-source-cache", cache,
        ])
        let ingest = try h.token("ingest")
        let read = try h.token("read")

        // 1. A report needing the demo's file: processed without it, the sources are asked in
        //    order, the upstream's file arrives, and the report is requeued and symbolicated.
        let raw = try CrashFixture.shared.report(symbolicate: "off", cached: false)
        let oracle = try ServeEndToEndTests().oracleSymbols(
            try CrashFixture.shared.report(symbolicate: "full", cached: false), image: "Demo")
        #expect(!oracle.isEmpty)
        let first = try #require(try server.curl("POST", "/api/v1/reports", token: ingest, body: raw).json?["id"] as? Int)
        var symbols: Set<String> = []
        try h.waitUntil("report \(first) to come out symbolicated from the upstream's file", timeout: 180) {
            let answer = try server.curl("GET", "/api/v1/reports/\(first)", token: read)
            guard answer.status == 200 else { return false }
            symbols = try ServeEndToEndTests().oracleSymbols(answer.body, image: "Demo")
            return !symbols.isEmpty
        }
        #expect(symbols == oracle, "ours: \(symbols.sorted()) runtime's: \(oracle.sorted())")
        #expect(try upstream.served() - servedBefore == 1, "debuginfod served the demo's file once")
        #expect(FileManager.default.fileExists(atPath: cache + "/.build-id/" + demoID.prefix(2) + "/" + demoID.dropFirst(2) + ".debug"))

        // The bad sources changed nothing: the other build's file was refused and not kept,
        // and each source's last answer is recorded.
        #expect(wrong.requestCount >= 1, "the wrong source was asked before the upstream")
        let seen = (try? String(contentsOfFile: wrong.requests, encoding: .utf8)) ?? ""
        #expect(seen.split(separator: "\n").allSatisfy { $0.hasSuffix(" from-the-file") }, "its header, and never our token: \(seen)")
        #expect(
            !FileManager.default.fileExists(atPath: cache + "/.build-id/" + otherID.prefix(2) + "/" + otherID.dropFirst(2) + ".debug"),
            "the other build's file was not kept")
        let answers = try sqlite(
            h.dbPath, "SELECT source, outcome FROM symbol_source_answers WHERE build_id = '\(demoID)' ORDER BY source")
        let outcomes = Dictionary(uniqueKeysWithValues: answers.map { ($0["source"] as? String ?? "", $0["outcome"] as? String ?? "") })
        #expect(outcomes["http://127.0.0.1:\(down)"] == "failed", "\(answers)")
        #expect(outcomes[wrong.url] == "refused", "\(answers)")
        #expect(outcomes[upstream.url] == "found", "\(answers)")

        // 2. A second report of the same build is symbolicated on its first pass, and nobody
        //    is asked anything.
        let wrongAsked = wrong.requestCount
        let second = try #require(
            try server.curl("POST", "/api/v1/reports", token: ingest, body: try CrashFixture.shared.report(symbolicate: "off", cached: false))
                .json?["id"] as? Int)
        try h.waitUntil("report \(second) to be processed", timeout: 120) {
            try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE report_id = \(second) AND state = 'done'") == 1
        }
        let secondSymbols = try ServeEndToEndTests().oracleSymbols(
            try server.curl("GET", "/api/v1/reports/\(second)", token: read).body, image: "Demo")
        #expect(secondSymbols == oracle)
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE report_id = \(second)") == 1, "no reprocessing needed")
        #expect(try upstream.served() - servedBefore == 1, "the file was not fetched again")
        #expect(wrong.requestCount == wrongAsked)

        // 3. The fetched file is served by our debuginfod endpoint (what remote workers fetch).
        let served = try server.curl("GET", "/buildid/\(demoID)/debuginfo", token: read)
        #expect(served.status == 200)
        #expect(served.body == FileManager.default.contents(atPath: demo))

        // 4. Per-source metrics.
        let metrics = try server.curl("GET", "/metrics", token: read).text
        #expect(metrics.contains(#"stackline_symbol_source_requests_total{outcome="found",source="\#(upstream.url)"} 1"#)
            || metrics.contains(#"stackline_symbol_source_requests_total{source="\#(upstream.url)",outcome="found"} 1"#), "\(metrics.prefix(4000))")
    }
}

extension SymbolSourcesTests {
    /// A sources file with a misspelt key or a value of the wrong type stops serve before it
    /// listens, naming the file, the source and the key.
    @Test func aSourcesFileWithAMistakeStopsServeNamingIt() throws {
        let h = try Harness()
        for (contents, expected) in [
            (#"{"sources": [{"url": "http://127.0.0.1:9", "timeout": 5}]}"#, #"sources[0]: unknown key "timeout""#),
            (#"{"sources": [{"url": "http://127.0.0.1:9"}, {"url": "http://127.0.0.1:9", "timeoutSeconds": "5"}]}"#,
             "sources[1].timeoutSeconds has the wrong type"),
            (#"{"sources": [{"url": "ftp://127.0.0.1/"}]}"#, "is not an http:// or https:// URL"),
            (#"{"source": []}"#, #"a "sources" array"#),
        ] {
            let file = h.dir.file("sources-\(UUID().uuidString.prefix(6)).json")
            try Data(contents.utf8).write(to: URL(fileURLWithPath: file))
            let out = try h.stackline(["serve", "--listen", "127.0.0.1:0", "--symbols", h.symbolsPath, "--symbol-sources", file])
            #expect(out.status != 0, "\(contents)")
            #expect(out.stderr.contains(expected) && out.stderr.contains(file), "\(contents): \(out.stderr)")
        }
    }
}

