import Foundation
import TestSupport
import Testing

/// `stackline symbols upload` against the real `stackline serve`: what reaches the server is
/// read from the server's side (its store's files, inodes and mtimes, its request log, its
/// database), never only from the client's output.
@Suite(.serialized) struct SymbolsUploadTests {
    /// Every file under the store with its inode, size and modification time: a second run
    /// that writes anything changes it.
    static func storeSnapshot(_ root: String) throws -> [String] {
        try runChecked("find", [root, "-path", root + "/.incoming", "-prune", "-o", "-type", "f", "-printf", "%P %i %s %T@\n"])
            .stdout.split(separator: "\n").map(String.init).sorted()
    }

    /// How many bodies the server received: its request log lines for POST /api/v1/symbols.
    static func uploadsLogged(_ server: ServerProcess) -> Int {
        server.log.split(separator: "\n").filter { $0.contains("method=POST") && $0.contains("path=/api/v1/symbols status=") }.count
    }

    @Test func uploadFromAFolderTwiceSendsNothingTheSecondTime() throws {
        let h = try Harness()
        let token = try h.token("symbols")
        let server = try h.startServer(["--workers", "0"])
        // A build folder: a split program (unstripped, stripped, debug file), a dSYM bundle,
        // a zip of another, and files that are no debug files.
        let build = h.dir.file("build")
        let program = try SplitProgram(in: build + "/crashy")
        try runChecked("cp", ["-R", MachOFixtures.dSYM, build + "/Sample.dSYM"])
        try runChecked("sh", ["-c", "cd \"$0\" && zip -qr \"$1\" libgeometry.dylib.dSYM", MachOFixtures.directory, build + "/dylib.zip"])
        try "notes\n".write(toFile: build + "/README.txt", atomically: true, encoding: .utf8)

        let environment = ["STACKLINE_TOKEN": token]
        let first = try runProcess(TestPaths.stackline, ["symbols", "upload", "--server", server.baseURL, build], environment: environment, timeout: 300)
        #expect(first.succeeded, "\(first.summary)\n\(server.log.suffix(2000))")
        // The server's store holds exactly the ids the oracles read.
        let expected = Set(try MachOFixtures.uuids(MachOFixtures.dSYMDWARF).values)
            .union(try MachOFixtures.uuids(MachOFixtures.dylibDWARF).values).union([program.buildID])
        #expect(SymbolsServerTests.storedIDs(h.symbolsPath) == expected)
        // One copy of the unstripped program fills both roles; the stripped one and the
        // debug file were not needed. Three bodies: the program, the bundle's DWARF, the zip.
        let base = h.symbolsPath + "/.build-id/\(program.buildID.prefix(2))/\(program.buildID.dropFirst(2))"
        #expect(try runProcess("cmp", [base + ".debug", program.unstripped]).succeeded)
        #expect(try runProcess("cmp", [base, program.unstripped]).succeeded)
        #expect(Self.uploadsLogged(server) == 3, "\(server.log)")
        #expect(first.stdout.contains("uploaded 3 files"), "\(first.stdout)")

        // The server builds each stored file's symcache after answering; the second run must
        // change nothing once those are there.
        for id in expected {
            let symcache = h.symbolsPath + "/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).symcache"
            try h.waitUntil("the symcache of \(id)", timeout: 120) { FileManager.default.fileExists(atPath: symcache) }
        }
        let before = try Self.storeSnapshot(h.symbolsPath)
        let second = try runProcess(TestPaths.stackline, ["symbols", "upload", "--server", server.baseURL, build], environment: environment, timeout: 300)
        #expect(second.succeeded, "\(second.summary)")
        #expect(second.stdout.contains("uploaded 0 files (0 bytes)"), "\(second.stdout)")
        #expect(Self.uploadsLogged(server) == 3, "the second run sent a body: \(server.log.suffix(1500))")
        #expect(try Self.storeSnapshot(h.symbolsPath) == before, "the second run changed the store")

        // The token was read from the environment and never printed or logged.
        for text in [first.stdout, first.stderr, second.stdout, second.stderr, server.log] { #expect(!text.contains(token)) }
    }

    @Test func waitReturnsOnceTheRequeuedReportsAreProcessed() throws {
        let h = try Harness()
        let demo = try CrashFixture.shared.binary()
        let demoID = try #require(try readelfBuildID(demo))
        let reports = try (0..<2).map { _ in try CrashFixture.shared.report(mode: "index", cached: false) }
        let ids = try h.submit(try h.write(reports))
        let token = try h.token("symbols")
        let server = try h.startServer(["--workers", "1"])
        try h.waitUntil("both reports processed without symbols") {
            try sqliteInt(h.dbPath, "SELECT COUNT(DISTINCT report_id) FROM missing_symbols WHERE build_id = '\(demoID)'") == 2
                && sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')") == 0
        }
        let folder = h.dir.file("demo")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: demo, toPath: folder + "/Demo")

        let upload = try runProcess(
            TestPaths.stackline, ["symbols", "upload", "--server", server.baseURL, "--wait", "--timeout", "240", "--json", folder],
            environment: ["STACKLINE_TOKEN": token], timeout: 300)
        #expect(upload.succeeded, "\(upload.summary)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(upload.stdout.utf8)) as? [String: Any])
        #expect((json["requeuedReportIds"] as? [Int])?.map(Int64.init).sorted() == ids.sorted(), "\(upload.stdout)")
        // When it returns, the database says the reprocessing is over and found the symbols.
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')") == 0)
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM missing_symbols WHERE build_id = '\(demoID)'") == 0)
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state = 'done'") == 4)
    }

    @Test func refusalsTokensAndBadServersAreReported() throws {
        let h = try Harness()
        let server = try h.startServer(["--workers", "0"])
        let program = try SplitProgram(in: h.dir.file("build"))
        // A truncated ELF file is refused before anything is sent; the rest goes.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: program.debugFile))
        try bytes.prefix(200).write(to: URL(fileURLWithPath: h.dir.file("build/broken.debug")))
        let token = try h.token("symbols")
        let out = try runProcess(
            TestPaths.stackline, ["symbols", "upload", "--server", server.baseURL, "--token", token, h.dir.file("build")], timeout: 120)
        #expect(out.status == 1, "\(out.summary)")
        #expect(out.stderr.contains("broken.debug"), "\(out.stderr)")
        #expect(SymbolsServerTests.storedIDs(h.symbolsPath) == [program.buildID])

        // No token; a token of another scope; no server listening.
        let none = try runProcess(TestPaths.stackline, ["symbols", "upload", "--server", server.baseURL, program.debugFile], environment: ["STACKLINE_TOKEN": ""])
        #expect(none.status != 0 && none.stderr.contains("STACKLINE_TOKEN"), "\(none.summary)")
        let read = try h.token("read")
        let wrong = try runProcess(TestPaths.stackline, ["symbols", "upload", "--server", server.baseURL, program.debugFile], environment: ["STACKLINE_TOKEN": read])
        #expect(wrong.status == 1 && wrong.stderr.contains("answered 403"), "\(wrong.summary)")
        #expect(!wrong.stderr.contains(read))
        server.signal(SIGTERM)
        _ = try server.waitForExit()
        let gone = try runProcess(TestPaths.stackline, ["symbols", "upload", "--server", server.baseURL, "--token", token, program.debugFile], timeout: 120)
        #expect(gone.status == 1 && gone.stderr.contains("stackline symbols upload:"), "\(gone.summary)")
    }
}
