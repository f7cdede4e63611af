import Foundation
import TestSupport
import Testing

/// `POST /api/v1/symbols` and `/api/v1/symbols/missing` through curl against the real
/// `stackline serve`. What was stored is read from the store's files (sidecar names, `cmp`),
/// ids come from readelf and llvm-dwarfdump, and requeued jobs from plain SQL.
@Suite(.serialized) struct SymbolsServerTests {
    static func storedIDs(_ store: String) -> Set<String> { storedBuildIDs(store) }

    /// Nothing of an upload stays behind in the store's `.incoming` folder.
    static func incomingIsEmpty(_ store: String) -> Bool {
        ((try? FileManager.default.contentsOfDirectory(atPath: store + "/.incoming")) ?? []).isEmpty
    }

    func files(_ answer: HTTPAnswer) -> [[String: Any]] { answer.json?["files"] as? [[String: Any]] ?? [] }

    @Test func oneFileAZipAndATarAreStoredAsSymbolsAddStoresThem() throws {
        let h = try Harness()
        let token = try h.token("symbols")
        let server = try h.startServer(["--workers", "0"])
        let program = try SplitProgram(in: h.dir.file("build"))
        let debug = try #require(FileManager.default.contents(atPath: program.debugFile))

        let first = try server.curl("POST", "/api/v1/symbols?name=crashy.debug", token: token, body: debug)
        #expect(first.status == 200, "\(first)")
        #expect(files(first).first?["outcome"] as? String == "stored")
        #expect(files(first).first?["buildId"] as? String == program.buildID)
        #expect(files(first).first?["path"] as? String == "crashy.debug")
        let stored = h.symbolsPath + "/.build-id/\(program.buildID.prefix(2))/\(program.buildID.dropFirst(2)).debug"
        #expect(FileManager.default.contents(atPath: stored) == debug)
        let sidecar = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stored.dropLast(6) + ".json"))) as? [String: Any])
        #expect(sidecar["source"] as? String == "upload: crashy.debug")
        let again = try server.curl("POST", "/api/v1/symbols?name=crashy.debug", token: token, body: debug)
        #expect(files(again).first?["outcome"] as? String == "kept", "\(again)")

        // A zip of dSYM bundles and a tar of one: the ids llvm-dwarfdump reads.
        let zip = h.dir.file("dSYMs.zip")
        try runChecked("sh", ["-c", "cd \"$0\" && zip -qr \"$1\" libgeometry.dylib.dSYM", MachOFixtures.directory, zip])
        let zipped = try server.curl("POST", "/api/v1/symbols?name=dSYMs.zip", token: token, body: try Data(contentsOf: URL(fileURLWithPath: zip)))
        #expect(zipped.status == 200, "\(zipped)")
        let tar = h.dir.file("Sample.tar")
        try runChecked("tar", ["-cf", tar, "-C", MachOFixtures.directory, "Sample.dSYM"])
        let tarred = try server.curl("POST", "/api/v1/symbols?name=Sample.tar", token: token, body: try Data(contentsOf: URL(fileURLWithPath: tar)))
        #expect(tarred.status == 200, "\(tarred)")
        #expect((tarred.json?["summary"] as? [String: Any])?["stored"] as? Int == 2, "\(tarred)")
        let expected = Set(try MachOFixtures.uuids(MachOFixtures.dylibDWARF).values)
            .union(try MachOFixtures.uuids(MachOFixtures.dSYMDWARF).values).union([program.buildID])
        #expect(Self.storedIDs(h.symbolsPath) == expected)
        #expect(Self.incomingIsEmpty(h.symbolsPath))
        // Each stored file gets its symcache from a child process after the answer; a lookup
        // then maps it without a warning (a damaged or stale one would be named on stderr).
        for id in expected {
            let symcache = h.symbolsPath + "/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).symcache"
            try h.waitUntil("the symcache of \(id)", timeout: 120) { FileManager.default.fileExists(atPath: symcache) }
            let looked = try h.stackline(["lookup", "--symbols", h.symbolsPath, "--build-id", id, "0x0"])
            #expect(looked.status == 0 && looked.stderr.isEmpty, "lookup of \(id): \(looked.stderr)")
        }
        #expect(!server.log.contains(token))
    }

    // Refused uploads (a hostile tar, not a debug file, an empty body) and the tokens' scopes:
    // ServerTests' SymbolRouteTests.refusalsAreAnswersAndLeaveNothingBehind, in process.

    @Test func uploadsOverTheCapGet413WithOrWithoutALength() throws {
        let h = try Harness()
        h.extraEnvironment = ["STACKLINE_SYMBOLS_MAX_UPLOAD_BYTES": "4096"]
        let token = try h.token("symbols")
        let server = try h.startServer(["--workers", "0"])
        let program = try SplitProgram(in: h.dir.file("build"))
        let debug = try Data(contentsOf: URL(fileURLWithPath: program.debugFile))
        #expect(debug.count > 4096)
        let declared = try server.curl("POST", "/api/v1/symbols", token: token, body: debug)
        #expect(declared.status == 413, "\(declared)")
        let chunked = try server.curl("POST", "/api/v1/symbols", token: token, body: debug, headers: ["Transfer-Encoding: chunked"])
        #expect(chunked.status == 413, "\(chunked)")
        #expect(Self.storedIDs(h.symbolsPath).isEmpty)
        #expect(Self.incomingIsEmpty(h.symbolsPath))
        // The server lives on.
        #expect(try server.curl("GET", "/healthz").status == 200)
    }

    @Test func missingAnswersWhatTheStoreLacksThroughOneNormaliser() throws {
        let h = try Harness()
        let token = try h.token("symbols")
        let server = try h.startServer(["--workers", "0"])
        let program = try SplitProgram(in: h.dir.file("build"))
        // Only the stripped binary: dynamic symbols at best.
        #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, program.stripped]).status == 0)
        let id = program.buildID
        // The stored id spelled in capitals with dashes, an unknown id, and something that is no id.
        let shouted = id.uppercased().enumerated().map { $0.offset == 8 ? "-" + String($0.element) : String($0.element) }.joined()
        let unknown = String(repeating: "0123456789abcdef", count: 2)
        let body = Data("[\"\(shouted)\", \"\(unknown)\", \"not-hex\"]".utf8)
        let bare = try server.curl("POST", "/api/v1/symbols/missing", token: token, body: body)
        #expect(bare.status == 200, "\(bare)")
        #expect(bare.json?["missing"] as? [String] == [unknown], "\(bare)")
        #expect((bare.json?["invalid"] as? [[String: Any]])?.map { $0["buildId"] as? String } == ["not-hex"])

        // Offers: the debug file has more than the stripped binary stored, so it is wanted;
        // another stripped image is not.
        let offers = Data("""
            [{"buildId": "\(id)", "hasDWARF": true, "hasSymbolTable": true, "executable": false},
             {"buildId": "\(id)", "hasDWARF": false, "hasSymbolTable": false, "executable": true}]
            """.utf8)
        let offered = try server.curl("POST", "/api/v1/symbols/missing", token: token, body: offers)
        #expect(offered.json?["missing"] as? [String] == [id], "\(offered)")
        #expect(try server.curl("POST", "/api/v1/symbols/missing", token: token, body: Data("{".utf8)).status == 400)
    }

    /// Reports processed without their debug file go back on the queue when it arrives over
    /// HTTP, and the server's own workers reprocess them.
    @Test func storingSymbolsRequeuesReportsThatLackedThem() throws {
        let h = try Harness()
        let demo = try CrashFixture.shared.binary()
        let demoID = try #require(try readelfBuildID(demo))
        let ids = try h.submit(try h.write([try CrashFixture.shared.report(mode: "index", cached: false)]))
        let token = try h.token("symbols")
        let server = try h.startServer(["--workers", "1"])
        try h.waitUntil("the report processed without symbols") {
            try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM missing_symbols WHERE build_id = '\(demoID)'") == 1
        }
        let answer = try server.curl("POST", "/api/v1/symbols?name=Demo", token: token, body: try Data(contentsOf: URL(fileURLWithPath: demo)))
        #expect(answer.status == 200, "\(answer)")
        #expect((answer.json?["requeuedReportIds"] as? [Int]).map { $0.map(Int64.init) } == ids, "\(answer)")
        try h.waitUntil("the report reprocessed with symbols") {
            try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM missing_symbols WHERE build_id = '\(demoID)'") == 0
                && sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')") == 0
        }
        let report = try h.stackline(["report", String(ids[0])])
        #expect(report.stdout.contains("lookUp(_:at:)"), "\(report.stdout)")
    }
}
