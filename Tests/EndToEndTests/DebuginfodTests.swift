import Foundation
import TestSupport
import Testing

/// The debuginfod API of `stackline serve`, driven by elfutils' own client (`debuginfod-find`),
/// gdb and curl. The bytes they get are compared with `cmp` against the files that were
/// added; a read token travels in `DEBUGINFOD_HEADERS_FILE`.
@Suite(.serialized) struct DebuginfodTests {
    /// A harness whose store holds the split program, a running server and a read token.
    struct Scene {
        let h: Harness
        let program: SplitProgram
        let server: ServerProcess
        let read: String
        let headersFile: String

        init(workers: String = "0", environment: [String: String] = [:]) throws {
            h = try Harness()
            h.extraEnvironment = environment
            program = try SplitProgram(in: h.dir.file("build"))
            let add = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, program.debugFile, program.stripped])
            #expect(add.status == 0, "\(add.stderr)")
            read = try h.token("read")
            headersFile = h.dir.file("debuginfod-headers")
            try "Authorization: Bearer \(read)\n".write(toFile: headersFile, atomically: true, encoding: .utf8)
            server = try h.startServer(["--workers", workers])
        }

        /// The environment debuginfod clients read, with a private cache.
        func clientEnvironment(cache: String, token: Bool = true) -> [String: String] {
            var env = ["DEBUGINFOD_URLS": server.baseURL, "DEBUGINFOD_CACHE_PATH": cache, "DEBUGINFOD_TIMEOUT": "30"]
            if token { env["DEBUGINFOD_HEADERS_FILE"] = headersFile }
            return env
        }

        var storedDebug: String { h.symbolsPath + "/.build-id/\(program.buildID.prefix(2))/\(program.buildID.dropFirst(2)).debug" }
    }

    func cmp(_ a: String, _ b: String) throws -> Bool { try runProcess("cmp", [a, b]).succeeded }

    @Test func debuginfodFindFetchesByteIdenticalFilesWithTheTokenFromItsHeadersFile() throws {
        let s = try Scene()
        let cache = s.h.dir.file("cache")
        let found = try runProcess("debuginfod-find", ["debuginfo", s.program.buildID], environment: s.clientEnvironment(cache: cache), timeout: 60)
        #expect(found.succeeded, "\(found.summary)\n\(s.server.log.suffix(2000))")
        let path = found.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try cmp(path, s.program.debugFile), "debuginfo differs from the objcopy --only-keep-debug file")
        #expect(try cmp(path, s.storedDebug))

        let exe = try runProcess("debuginfod-find", ["executable", s.program.buildID], environment: s.clientEnvironment(cache: cache), timeout: 60)
        #expect(exe.succeeded, "\(exe.summary)")
        #expect(try cmp(exe.stdout.trimmingCharacters(in: .whitespacesAndNewlines), s.program.stripped))

        // Without the headers file: no token, no file (and the client says so).
        let anonymous = try runProcess(
            "debuginfod-find", ["debuginfo", s.program.buildID], environment: s.clientEnvironment(cache: s.h.dir.file("cache2"), token: false),
            timeout: 60)
        #expect(!anonymous.succeeded)
        #expect(s.server.log.contains("path=/buildid/\(s.program.buildID)/debuginfo status=401"), "\(s.server.log.suffix(2000))")
        #expect(!s.server.log.contains(s.read), "the token must never be logged")
    }

    /// `debuginfod-find section` gets a section's bytes: `.debug_info` from the debuginfo file,
    /// `.text` (NOBITS there, as `--only-keep-debug` leaves it) from the executable. GNU
    /// objcopy's `--dump-section` of the files that were added is the oracle.
    @Test func debuginfodFindFetchesSectionsAsObjcopyDumpsThem() throws {
        let s = try Scene()
        let cache = s.h.dir.file("cache")
        for (section, source) in [(".debug_info", s.program.debugFile), (".text", s.program.stripped), (".debug_line", s.program.debugFile)] {
            let expected = s.h.dir.file("expected\(section)")
            try runChecked("objcopy", ["--dump-section", "\(section)=\(expected)", source, s.h.dir.file("scratch.o")])
            let found = try runProcess("debuginfod-find", ["section", s.program.buildID, section], environment: s.clientEnvironment(cache: cache), timeout: 60)
            #expect(found.succeeded, "\(section): \(found.summary)\n\(s.server.log.suffix(1500))")
            #expect(try cmp(found.stdout.trimmingCharacters(in: .whitespacesAndNewlines), expected), "\(section) differs from objcopy's dump of \(source)")
        }
        #expect(s.server.log.contains("path=/buildid/\(s.program.buildID)/section/.text status=200"))

        // No such section, a section without contents anywhere, a name that is no name.
        let missing = try s.server.curl("GET", "/buildid/\(s.program.buildID)/section/.no_such_section", token: s.read)
        #expect(missing.status == 404, "\(missing.body)")
        let nobits = try s.server.curl("GET", "/buildid/\(s.program.buildID)/section/.bss", token: s.read)
        #expect(nobits.status == 404, "\(nobits.body)")
        let badName = try s.server.curl("GET", "/buildid/\(s.program.buildID)/section/%20x", token: s.read)
        #expect(badName.status == 400, "\(badName.body)")
        let anonymous = try s.server.curl("GET", "/buildid/\(s.program.buildID)/section/.debug_info")
        #expect(anonymous.status == 401)
    }

    @Test func gdbResolvesAStrippedBinarysCoreAndAddressesThroughTheServer() throws {
        let s = try Scene()
        // The stripped binary alone in a folder: nothing beside it that gdb could read locally.
        let run = s.h.dir.file("run")
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: s.program.stripped, toPath: run + "/crashy")
        let crashed = try runProcess("/bin/sh", ["-c", "ulimit -c unlimited; exec ./crashy", "sh"], currentDirectory: run)
        #expect(crashed.signaled || crashed.status != 0, "the program should crash: \(crashed.summary)")
        let core = try FileManager.default.contentsOfDirectory(atPath: run).first { $0 == "core" || $0.hasPrefix("core.") }

        func gdb(_ commands: [String], cache: String, server: Bool, core: String? = nil) throws -> String {
            var env = s.clientEnvironment(cache: cache)
            if !server { env["DEBUGINFOD_URLS"] = "" }
            let args = ["-nx", "-batch", "-iex", "set debuginfod enabled \(server ? "on" : "off")"] + commands.flatMap { ["-ex", $0] }
                + ["./crashy"] + (core.map { [$0] } ?? [])
            let out = try runProcess("gdb", args, environment: env, currentDirectory: run, timeout: 120)
            return out.stdout + out.stderr
        }
        // File addresses, asked of the binary alone (a core would relocate them).
        let address = "0x" + String(s.program.crashSite, radix: 16)
        let lookups = ["info symbol \(address)", "info line *\(address)"]
        // A core where the system writes one; otherwise the crash is reproduced live under gdb.
        let backtrace = core != nil ? ["bt"] : ["run", "bt"]

        // Control: without the server gdb knows no function of the stripped binary.
        let blind = try gdb(lookups, cache: s.h.dir.file("gdb-cache0"), server: false)
            + gdb(backtrace, cache: s.h.dir.file("gdb-cache0"), server: false, core: core)
        #expect(!blind.contains("crash_site"), "\(blind)")

        let cache = s.h.dir.file("gdb-cache")
        let looked = try gdb(lookups, cache: cache, server: true)
        #expect(looked.contains("crash_site in section .text"), "\(looked)\n\(s.server.log.suffix(1500))")
        #expect(looked.contains("Line 3 of \"\(s.program.dir)/crashy.c\" starts at address \(address) <crash_site>"), "\(looked)")
        let traced = try gdb(backtrace, cache: cache, server: true, core: core)
        #expect(traced.range(of: #"#0 .*crash_site \(p=0x0, v=1\) at .*crashy\.c:3"#, options: .regularExpression) != nil, "\(traced)")
        // What gdb fetched is the stored file, byte for byte.
        let fetched = cache + "/\(s.program.buildID)/debuginfo"
        #expect(try cmp(fetched, s.storedDebug), "gdb's cached debuginfo differs from the stored file")
        #expect(s.server.log.contains("path=/buildid/\(s.program.buildID)/debuginfo status=200"))
    }

    // Status codes, ranges, HEAD and the headers: ServerTests' SymbolRouteTests
    // .debuginfodAnswersStatusCodesRangesAndHeaders drives the same routes in process.

    /// Nothing outside the store: a stored name turned into a link, or a file swapped for
    /// another build's, is not served.
    @Test func linksAndSwappedFilesInTheStoreAreNotServed() throws {
        let s = try Scene()
        let id = s.program.buildID
        let secret = s.h.dir.file("secret.txt")
        try "top secret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        try FileManager.default.removeItem(atPath: s.storedDebug)
        try FileManager.default.createSymbolicLink(atPath: s.storedDebug, withDestinationPath: secret)
        let linked = try s.server.curl("GET", "/buildid/\(id)/debuginfo", token: s.read)
        #expect(linked.status == 500 && !linked.text.contains("top secret"), "\(linked)")

        // The prefix folder itself a link to a folder outside the store.
        let outside = s.h.dir.file("outside")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: s.program.stripped, toPath: outside + "/\(id.dropFirst(2))")
        let prefix = s.h.symbolsPath + "/.build-id/\(id.prefix(2))"
        try FileManager.default.removeItem(atPath: prefix)
        try FileManager.default.createSymbolicLink(atPath: prefix, withDestinationPath: outside)
        let viaLink = try s.server.curl("GET", "/buildid/\(id)/executable", token: s.read)
        #expect(viaLink.status == 500, "\(viaLink)")

        // Another build's file under this id.
        try FileManager.default.removeItem(atPath: prefix)
        let other = try SplitProgram(in: s.h.dir.file("other"))
        try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: other.debugFile, toPath: s.storedDebug)
        let swapped = try s.server.curl("GET", "/buildid/\(id)/debuginfo", token: s.read)
        #expect(swapped.status == 500 && swapped.text.contains("changed since it was stored"), "\(swapped)")
    }

    /// A file far larger than a response buffer is streamed: byte-identical, and the server's
    /// peak memory (VmHWM) grows by much less than the file.
    @Test func largeFilesAreStreamedNotLoaded() throws {
        let s = try Scene()
        let big = s.h.dir.file("big.debug")
        let filler = s.h.dir.file("filler")
        try runChecked("sh", ["-c", "head -c 134217728 /dev/urandom > \"$0\"", filler])
        try runChecked("objcopy", ["--add-section", ".stackline_filler=\(filler)", s.program.debugFile, big])
        try FileManager.default.removeItem(atPath: filler)
        // The big file replaces the small one: same build-id, same quality, so remove first.
        #expect(try s.h.stackline(["symbols", "rm", "--symbols", s.h.symbolsPath, s.program.buildID]).status == 0)
        #expect(try s.h.stackline(["symbols", "add", "--symbols", s.h.symbolsPath, big]).status == 0)

        func peakKiB() throws -> Int {
            let status = try String(contentsOfFile: "/proc/\(s.server.pid)/status", encoding: .utf8)
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
            return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        }
        let before = try peakKiB()
        let out = s.h.dir.file("fetched")
        let fetched = try runProcess(
            "curl", ["-sS", "-o", out, "-w", "%{http_code}", "-H", "Authorization: Bearer \(s.read)", s.server.baseURL + "/buildid/\(s.program.buildID)/debuginfo"],
            timeout: 300)
        #expect(fetched.stdout == "200", "\(fetched.summary)")
        #expect(try cmp(out, big))
        let grown = try peakKiB() - before
        #expect(grown < 64 * 1024, "serving a 128 MiB file raised the server's peak memory by \(grown) KiB")
    }
}
