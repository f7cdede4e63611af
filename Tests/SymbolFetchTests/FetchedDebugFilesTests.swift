import Foundation
import ReportModel
import ServiceClient
import SymbolFetch
import SymbolStore
import Symbolication
import TestSupport
import Testing

/// `FetchedDebugFiles` against real servers: elfutils' own `debuginfod` serving C programs
/// compiled here (build-ids read back by binutils `readelf`, downloads counted both by the cache
/// and by debuginfod's `/metrics` and `--verbose` log), and a python3 `http.server` fake that
/// plays a hostile server answering one build-id with another build's file.
///
/// Everything that waits on HTTP runs on a thread of its own (`onThread`): `ServiceClient`
/// blocks its caller while URLSession works on Dispatch's pool, which on Linux is as small as
/// the core count, and the test runner's own threads come from that pool.
@Suite struct FetchedDebugFilesTests {
    // MARK: Fetching

    /// A fetched file lands under its build-id in the store layout, and the symbolicator opens it
    /// from the cache directory searched after an (empty) local store.
    @Test func aFetchedFileIsStoredUnderItsBuildIDAndSymbolicates() async throws {
        let scene = try Scene()
        defer { scene.remove() }
        let program = try scene.compile("alpha", function: "stackline_probe_alpha", constant: 3)
        let server = try await scene.debuginfod(files: 1)
        defer { server.stop() }
        let local = SymbolStoreDirectory(root: scene.dir.file("local"))
        let cache = try scene.cache(server.baseURL, capacity: 64 << 20, local: [local])

        let pin = try await onThread { cache.ensure([program.id]) }
        defer { pin.release() }
        #expect(pin.pinned == [program.id])
        #expect(pin.missing.isEmpty && pin.local.isEmpty)
        #expect(cache.fetches == 1)
        #expect(cache.heldBuildIds == [program.id])

        let stored = scene.cacheDir + "/.build-id/\(program.id.hex.prefix(2))/\(program.id.hex.dropFirst(2)).debug"
        #expect(try readelfBuildID(stored) == program.id.hex, "readelf reads the requested build-id in the stored file")
        #expect(storedBuildIDs(scene.cacheDir) == [program.id.hex])
        #expect(try await server.metric(#"http_responses_transfer_bytes_count{code="200",type="debuginfo"}"#) == 1)
        #expect(try await server.metric(#"http_requests_total{type="executable"}"#) == 0, "no executable asked for once the debuginfo came")
        #expect(cache.sizeBytes > (try fileSize(program.path)), "the size counts the file and its sidecar")

        let opened = try OpenDebugFiles(stores: [local, cache.store]).file(buildID: program.id)
        #expect(opened.elf.buildID == program.id)
        let frame = try symbolicatedFrame(program, stores: [local, cache.store])
        #expect(frame.status == .symbolicated)
        #expect(frame.function == program.function)
        #expect(frame.file?.hasSuffix("alpha.c") == true)
    }

    /// Eight threads asking for one build-id at once cause exactly one download: counted by the
    /// cache, by debuginfod's metrics and by its request log.
    @Test func concurrentCallersForOneBuildIDShareOneDownload() async throws {
        let scene = try Scene()
        defer { scene.remove() }
        // 4 MB of initialised data, so the download lasts long enough for callers to meet it.
        let program = try scene.compile("large", function: "stackline_probe_large", constant: 5, padding: 4 << 20)
        let server = try await scene.debuginfod(files: 1)
        defer { server.stop() }
        let cache = try scene.cache(server.baseURL, capacity: 64 << 20)

        let pins = try await onThread { () -> [FetchPin] in
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            let pins = Locked<[FetchPin]>([])
            for _ in 0..<8 {
                done.enter()
                Thread {
                    start.wait()
                    let pin = cache.ensure([program.id])
                    pins.mutate { $0.append(pin) }
                    done.leave()
                }.start()
            }
            for _ in 0..<8 { start.signal() }
            done.wait()
            return pins.value
        }
        defer { pins.forEach { $0.release() } }

        #expect(pins.count == 8)
        #expect(pins.allSatisfy { $0.pinned == [program.id] }, "every caller gets the file")
        #expect(cache.fetches == 1)
        #expect(cache.counters.requests == 1)
        #expect(cache.counters.sharedDownloads >= 1, "callers met the download in flight and waited for it")
        try await eventually { try server.metricNow(#"http_responses_transfer_bytes_count{code="200",type="debuginfo"}"#) >= 1 }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await server.metric(#"http_responses_transfer_bytes_count{code="200",type="debuginfo"}"#) == 1)
        #expect(try await server.metric(#"http_requests_total{type="debuginfo"}"#) == 1)
        #expect(server.logLines(containing: "GET /buildid/\(program.id.hex)/debuginfo 200").count == 1)
        #expect(storedBuildIDs(scene.cacheDir) == [program.id.hex])
    }

    // MARK: Capacity

    /// With room for two of three files: the least recently used goes, a pinned one never does
    /// (even when that leaves the cache over its capacity until the pin is released), and the
    /// order of use survives a new cache on the same directory (the sidecars' mtimes).
    @Test func theLeastRecentlyUsedUnpinnedEntryIsEvicted() async throws {
        let scene = try Scene()
        defer { scene.remove() }
        let a = try scene.compile("one", function: "stackline_probe_one", constant: 11)
        let b = try scene.compile("two", function: "stackline_probe_two", constant: 12)
        let c = try scene.compile("six", function: "stackline_probe_six", constant: 13)
        let server = try await scene.debuginfod(files: 3)
        defer { server.stop() }
        let sizes = try [a, b, c].map { try fileSize($0.path) }
        // Two entries (file + a sidecar of well under 1 KB each) fit, three do not.
        let capacity = sizes.max()! * 5 / 2
        #expect(sizes.reduce(0, +) > capacity && 2 * (sizes.max()! + 1024) < capacity)
        var cache = try scene.cache(server.baseURL, capacity: capacity)
        func use(_ ids: BuildID...) async throws -> FetchPin {
            let cache = cache
            return try await onThread { cache.ensure(ids) }
        }

        // a, b, then a again: b is the least recently used when c arrives.
        try await use(a.id).release()
        try await use(b.id).release()
        try await use(a.id).release()
        try await use(c.id).release()
        #expect(Set(cache.heldBuildIds) == [a.id, c.id])
        #expect(storedBuildIDs(scene.cacheDir) == [a.id.hex, c.id.hex], "b's files are gone from the directory")
        #expect(cache.counters.evictions == 1)
        #expect(cache.sizeBytes <= capacity)
        #expect(cache.fetches == 3, "a's second use came from the cache")
        // a used once more: c (added after a) is now the least recently used.
        try await use(a.id).release()
        #expect(cache.fetches == 3)

        // A new cache on the same directory knows what it holds and in which order of use (not of adding).
        cache = try scene.cache(server.baseURL, capacity: capacity)
        #expect(Set(cache.heldBuildIds) == [a.id, c.id])
        #expect(cache.sizeBytes <= capacity && cache.sizeBytes > 2 * sizes.min()!)
        try await use(b.id).release()
        #expect(Set(cache.heldBuildIds) == [a.id, b.id], "c, the least recently used before the restart, went")

        // a pinned, then b used: when c arrives, a is the least recently used but pinned, so b goes.
        let pinA = try await use(a.id)
        try await use(b.id).release()
        try await use(c.id).release()
        #expect(Set(cache.heldBuildIds) == [a.id, c.id])

        // Everything pinned: nothing can go, the cache stays over its capacity until a release.
        let pinC = try await use(c.id)
        let pinB = try await use(b.id)
        #expect(Set(cache.heldBuildIds) == [a.id, b.id, c.id])
        #expect(cache.sizeBytes > capacity)
        pinA.release()
        #expect(Set(cache.heldBuildIds) == [b.id, c.id], "released, a (least recently used) goes")
        #expect(cache.sizeBytes <= capacity)
        pinB.release()
        pinC.release()
        #expect(storedBuildIDs(scene.cacheDir) == [b.id.hex, c.id.hex])
        #expect(cache.fetches == 3, "b, c, b again after its eviction")
        #expect(cache.counters.evictions == 3)
    }

    // MARK: Answers that are not a file

    /// An id the server lacks: no file, and a second `ensure` within the window asks nothing;
    /// after the window it asks again.
    @Test func anIDTheServerLacksIsRememberedForAWhile() async throws {
        let scene = try Scene()
        defer { scene.remove() }
        _ = try scene.compile("present", function: "stackline_probe_present", constant: 7)
        let server = try await scene.debuginfod(files: 1)
        defer { server.stop() }
        // A window no run of this test outlasts, so "within the window" never depends on how
        // busy the machine is; the window's end is checked below with a second cache.
        let cache = try scene.cache(server.baseURL, capacity: 64 << 20, notFoundRetention: .seconds(3600))
        let absent = try BuildID("00112233445566778899aabbccddeeff01234567")

        let first = try await onThread { cache.ensure([absent]) }
        #expect(first.pinned.isEmpty && first.missing == [absent])
        #expect(first.errors[absent] == .notOnServer(buildID: absent))
        #expect(cache.notOnServer == 1 && cache.fetches == 0)
        #expect(cache.counters.requests == 2, "debuginfo, then executable")
        try await eventually { try server.metricNow(#"http_responses_transfer_bytes_count{code="404",type="executable"}"#) == 1 }
        #expect(try await server.metric(#"http_responses_transfer_bytes_count{code="404",type="debuginfo"}"#) == 1)

        let second = try await onThread { cache.ensure([absent]) }
        #expect(second.missing == [absent])
        #expect(second.errors[absent] == .notOnServer(buildID: absent))
        #expect(cache.counters.requests == 2, "no request within the window")
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await server.metric(#"http_requests_total{type="debuginfo"}"#) == 1)
        #expect(try await server.metric(#"http_requests_total{type="executable"}"#) == 1)
        #expect(server.logLines(containing: "/buildid/\(absent.hex)/").count == 2)
        #expect(storedBuildIDs(scene.cacheDir).isEmpty)

        // A short window: once it has certainly passed (we sleep longer), the id is asked for again.
        let brief = try scene.cache(server.baseURL, capacity: 64 << 20, notFoundRetention: .milliseconds(100), directory: "brief")
        _ = try await onThread { brief.ensure([absent]) }
        #expect(brief.counters.requests == 2)
        try await Task.sleep(for: .milliseconds(400))
        _ = try await onThread { brief.ensure([absent]) }
        #expect(brief.counters.requests == 4, "asked again once the window passed")
        #expect(brief.notOnServer == 2)
    }

    /// No answer at all (nothing listens) is not remembered: the next job asks again.
    @Test func aTransportErrorIsNotRemembered() async throws {
        let scene = try Scene()
        defer { scene.remove() }
        let cache = try scene.cache("http://127.0.0.1:\(try freeLoopbackPort())", capacity: 1 << 20)
        let id = try BuildID("aabbccddeeff00112233445566778899aabbccdd")
        let first = try await onThread { cache.ensure([id]) }
        #expect(first.missing == [id])
        if case .transport? = first.errors[id] {} else { Issue.record("expected a transport error, got \(String(describing: first.errors[id]))") }
        _ = try await onThread { cache.ensure([id]) }
        #expect(cache.counters.requests == 2)
        #expect(cache.counters.failures == 2)
        #expect(cache.notOnServer == 0 && cache.fetches == 0)
    }

    /// A hostile server answers build-id A with program B's file: refused, counted, nothing stays
    /// in the cache (neither A nor B), and it is not downloaded again within the window.
    @Test func aFileServedUnderAnotherBuildIDIsRefused() async throws {
        let scene = try Scene()
        defer { scene.remove() }
        let a = try scene.compile("asked", function: "stackline_probe_asked", constant: 21)
        let b = try scene.compile("given", function: "stackline_probe_given", constant: 22)
        let fake = try FakeServer(answering: a.id, with: b.path, scratch: scene.dir)
        defer { fake.stop() }
        let log = Locked<[String]>([])
        let cache = try scene.cache(fake.baseURL, capacity: 64 << 20) { line in log.mutate { $0.append(line) } }

        let pin = try await onThread { cache.ensure([a.id]) }
        #expect(pin.pinned.isEmpty && pin.missing == [a.id])
        if case .mismatch(let id, _, let served, _)? = pin.errors[a.id] {
            #expect(id == a.id && served == [b.id])
        } else {
            Issue.record("expected a mismatch, got \(String(describing: pin.errors[a.id]))")
        }
        #expect(cache.mismatches == 1 && cache.fetches == 1)
        #expect(cache.heldBuildIds.isEmpty && cache.sizeBytes == 0)
        #expect(storedBuildIDs(scene.cacheDir).isEmpty, "neither A nor B is left in the directory")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: scene.cacheDir + "/.fetching")) ?? ["?"]).isEmpty)
        #expect(log.value.contains { $0.contains(a.id.hex) && $0.contains(b.id.hex) }, "the log names both ids: \(log.value)")

        _ = try await onThread { cache.ensure([a.id]) }
        #expect(fake.requests == ["/buildid/\(a.id.hex)/debuginfo"], "one download, not repeated within the window")
        #expect(cache.mismatches == 1)
    }

    // MARK: Local stores

    /// A build-id a local store (`--symbols`) holds is used from there: no request at all.
    @Test func aLocalStoresFileIsUsedWithoutARequest() async throws {
        let scene = try Scene()
        defer { scene.remove() }
        let program = try scene.compile("local", function: "stackline_probe_local", constant: 9)
        let server = try await scene.debuginfod(files: 1)
        defer { server.stop() }
        let local = SymbolStoreDirectory(root: scene.dir.file("local"))
        _ = try local.addFile(path: program.path)
        let cache = try scene.cache(server.baseURL, capacity: 64 << 20, local: [local])

        let pin = try await onThread { cache.ensure([program.id]) }
        #expect(pin.local == [program.id] && pin.pinned.isEmpty && pin.missing.isEmpty)
        #expect(cache.counters.requests == 0 && cache.fetches == 0)
        #expect(cache.heldBuildIds.isEmpty)
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await server.metric(#"http_requests_total{type="debuginfo"}"#) == 0)
        #expect(server.logLines(containing: "/buildid/").isEmpty)
        let frame = try symbolicatedFrame(program, stores: [local, cache.store])
        #expect(frame.status == .symbolicated && frame.function == program.function)
    }

    /// The symbolicator searches its stores in order: a store holding only the symbol table of a
    /// build wins over a later one holding its DWARF, and a store that lacks a build is passed over.
    @Test func theFirstStoreHoldingADebugFileAnswers() async throws {
        let scene = try Scene()
        defer { scene.remove() }
        let program = try scene.compile("order", function: "stackline_probe_order", constant: 4)
        let stripped = scene.dir.file("order.stripped")
        try runChecked(try findTool("strip"), ["--strip-debug", "-o", stripped, program.path])
        let symbolsOnly = SymbolStoreDirectory(root: scene.dir.file("symbols-only"))
        let full = SymbolStoreDirectory(root: scene.dir.file("full"))
        let empty = SymbolStoreDirectory(root: scene.dir.file("empty"))
        _ = try symbolsOnly.addFile(path: stripped)
        _ = try full.addFile(path: program.path)

        let fromSymbols = try symbolicatedFrame(program, stores: [empty, symbolsOnly, full])
        #expect(fromSymbols.status == .noLineInfo && fromSymbols.function == program.function)
        let fromDWARF = try symbolicatedFrame(program, stores: [empty, full, symbolsOnly])
        #expect(fromDWARF.status == .symbolicated && fromDWARF.line != nil)
        #expect(Symbolicator(stores: [empty, full]).store.root == empty.root, "`store` is the first store")
    }
}

/// Runs `body` on a thread of its own and waits without holding one of the runner's threads.
private func onThread<T>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    let box = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<UncheckedBox<T>, any Error>) in
        Thread {
            do { continuation.resume(returning: UncheckedBox(try body())) } catch { continuation.resume(throwing: error) }
        }.start()
    }
    return box.value
}

/// Carries a value made on another thread back to the test (pins, servers: used by one test only).
private struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Polls `condition` (on a thread of its own) for up to 10 s: servers count a request once its answer is out.
private func eventually(_ condition: @escaping @Sendable () throws -> Bool) async throws {
    let deadline = Date().addingTimeInterval(10)
    while try await !onThread(condition) {
        guard Date() < deadline else { throw TestSupportError("condition not met within 10 s") }
        try await Task.sleep(for: .milliseconds(50))
    }
}

private func fileSize(_ path: String) throws -> Int64 {
    guard let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber else {
        throw TestSupportError("no size for \(path)")
    }
    return size.int64Value
}

// MARK: - Scene

/// A compiled test program: its path, its build-id as readelf reads it, and one function.
private struct Program {
    var path: String
    var id: BuildID
    var function: String
}

/// A temporary directory with `served/` (what the servers serve) and `cache/`.
private struct Scene {
    let dir: TempDirectory
    var served: String { dir.file("served") }
    var cacheDir: String { dir.file("cache") }

    init() throws {
        dir = try TempDirectory("fetch-cache")
        try FileManager.default.createDirectory(atPath: served, withIntermediateDirectories: true)
    }

    func remove() { dir.remove() }

    /// debuginfod over `served/`, started and waited for on a thread of its own.
    func debuginfod(files: Int) async throws -> DebuginfodServer {
        let (served, scratch) = (self.served, dir.path)
        return try await onThread { try DebuginfodServer(serving: served, files: files, scratch: scratch) }
    }

    /// Compiles a C program into `served/NAME` with `cc -g -Wl,--build-id`; `padding` bytes of
    /// initialised data make it larger.
    func compile(_ name: String, function: String, constant: Int, padding: Int = 0) throws -> Program {
        let source = dir.file(name + ".c")
        let data = padding > 0 ? "static const char padding[\(padding)] = { 1 };\n" : "static const char padding[1] = { 1 };\n"
        let text = """
            \(data)static volatile int sink;
            __attribute__((noinline)) int \(function)(int x) {
                return x * \(constant) + padding[x & 0];
            }
            int main(int argc, char **argv) {
                (void)argv;
                sink = \(function)(argc);
                return 0;
            }

            """
        try text.write(toFile: source, atomically: true, encoding: .utf8)
        let output = served + "/" + name
        try runChecked(try findTool("cc"), ["-g", "-O0", "-Wl,--build-id", "-o", output, source])
        guard let hex = try readelfBuildID(output) else { throw TestSupportError("readelf found no build-id in \(output)") }
        return Program(path: output, id: try BuildID(hex), function: function)
    }

    /// The not-found window defaults to an hour: long enough that no test depends on how fast this machine is.
    func cache(
        _ url: String, capacity: Int64, local: [SymbolStoreDirectory] = [], notFoundRetention: Duration = .seconds(3600),
        logger: ((String) -> Void)? = nil, directory: String? = nil
    ) throws -> FetchedDebugFiles {
        try FetchedDebugFiles(
            directory: directory.map { cacheDir + "-" + $0 } ?? cacheDir, capacityBytes: capacity, client: try ServiceClient(base: url, token: "sl_test_token", option: "--connect"),
            localStores: local, logger: logger, notFoundRetention: notFoundRetention)
    }
}

/// The outermost frame a report with one pc in `program`'s function comes out with.
private func symbolicatedFrame(_ program: Program, stores: [SymbolStoreDirectory]) throws -> SymbolicatedFrame {
    let nm = try runChecked(try findTool("nm"), ["--defined-only", program.path]).stdout
    guard let line = nm.split(separator: "\n").first(where: { $0.hasSuffix(" " + program.function) }),
        let address = UInt64(line.split(separator: " ")[0], radix: 16)
    else { throw TestSupportError("nm does not list \(program.function) in \(program.path)") }
    let load: UInt64 = 0x5555_0000_0000
    let report = RawReport(
        format: "test", kind: .crash, arch: Arch("x86_64"),
        images: [BinaryImage(name: "program", id: program.id, loadAddress: Address(load), size: 0x100000)],
        threads: [RawThread(index: 0, crashed: true, frames: [RawFrame(address: Address(load + address + 4), kind: .pc)])])
    let out = Symbolicator(stores: stores).symbolicate(report)
    return try #require(out.threads.first?.frames.last)
}


// MARK: - Servers

/// elfutils `debuginfod -F` over a directory, on a free loopback port, logging requests (`-v`).
private final class DebuginfodServer: @unchecked Sendable {
    let process: Process
    let port: Int
    let logPath: String
    private let metrics: ServiceClient

    /// Starts the server and waits until its first scan has indexed `files` files.
    init(serving directory: String, files: Int, scratch: String) throws {
        var lastLog = ""
        for attempt in 0..<3 {
            let port = try freeLoopbackPort()
            let logPath = scratch + "/debuginfod-\(attempt).log"
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try findTool("debuginfod"))
            process.arguments = [
                "-F", "-p", "\(port)", "-d", scratch + "/debuginfod-\(attempt).sqlite", "-t", "0", "-g", "0", "-v", directory,
            ]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle(forWritingAtPath: logPath)
            process.standardError = FileHandle(forWritingAtPath: logPath)
            try process.run()
            let client = try ServiceClient(base: "http://127.0.0.1:\(port)", token: "unused")
            let deadline = Date().addingTimeInterval(30)
            var ready = false
            while process.isRunning, Date() < deadline {
                if let text = try? String(decoding: client.expectSuccess("GET", "metrics", timeout: 5), as: UTF8.self),
                    Self.value(#"thread_work_total{role="traverse"}"#, in: text) >= 1,
                    Self.value(#"thread_work_pending{role="scan"}"#, in: text) == 0,
                    Self.value(#"scanned_files_total{source="file"}"#, in: text) >= Double(files)
                {
                    ready = true
                    break
                }
                Thread.sleep(forTimeInterval: 0.1)
            }
            if ready {
                self.process = process
                self.port = port
                self.logPath = logPath
                self.metrics = client
                return
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            lastLog = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        }
        throw TestSupportError("debuginfod did not become ready: \(lastLog.suffix(2000))")
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// One value of `/metrics` (0 when the line is absent: debuginfod lists a counter once it counted).
    func metric(_ name: String) async throws -> Double {
        try await onThread { try self.metricNow(name) }
    }

    /// `metric`, blocking the calling thread (not one of the test runner's).
    func metricNow(_ name: String) throws -> Double {
        Self.value(name, in: String(decoding: try metrics.expectSuccess("GET", "metrics", timeout: 10), as: UTF8.self))
    }

    static func value(_ name: String, in text: String) -> Double {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1)) ?? -1
        }
        return 0
    }

    func logLines(containing needle: String) -> [String] {
        ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init).filter { $0.contains(needle) }
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// The hostile server: python3 `http.server` answering `GET /buildid/ID/debuginfo` with another
/// file's bytes, 404 to everything else, and logging every path it was asked for.
private final class FakeServer {
    let process = Process()
    let port: Int
    private let requestLog: String

    init(answering id: BuildID, with file: String, scratch: TempDirectory) throws {
        let script = """
            import http.server, os, sys
            wanted, payload_path, log_path, port_path = sys.argv[1:5]
            payload = open(payload_path, "rb").read()
            class Handler(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    with open(log_path, "a") as log:
                        log.write(self.path + "\\n")
                    body = payload if self.path == "/buildid/%s/debuginfo" % wanted else b"not found"
                    self.send_response(200 if body is payload else 404)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                def log_message(self, *args):
                    pass
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            with open(port_path + ".tmp", "w") as out:
                out.write(str(server.server_address[1]))
            os.rename(port_path + ".tmp", port_path)
            server.serve_forever()

            """
        let scriptPath = scratch.file("fake-server.py")
        let portPath = scratch.file("fake-server.port")
        requestLog = scratch.file("fake-server.requests")
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: requestLog, contents: nil)
        process.executableURL = URL(fileURLWithPath: try findTool("python3"))
        process.arguments = [scriptPath, id.hex, file, requestLog, portPath]
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(20)
        while true {
            if let text = try? String(contentsOfFile: portPath, encoding: .utf8), let port = Int(text) {
                self.port = port
                return
            }
            guard process.isRunning, Date() < deadline else {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                throw TestSupportError("the fake server did not start")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }
    var requests: [String] {
        ((try? String(contentsOfFile: requestLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}

// MARK: - Several sources

extension FetchedDebugFilesTests {
    /// Sources are asked in order, each with its own memory: one that is down is skipped while it
    /// backs off (not asked again), one that lacks an id is not asked for it again, and each
    /// answer is reported per source. Oracles: debuginfod's own `/metrics`, and the ids the
    /// test made up or compiled.
    @Test func sourcesAreAskedInOrderAndADownOneIsSkippedWhileItBacksOff() async throws {
        let scene = try Scene()
        defer { scene.remove() }
        let program = try scene.compile("gamma", function: "stackline_probe_gamma", constant: 7)
        let server = try await scene.debuginfod(files: 1)
        defer { server.stop() }
        let nowhere = try BuildID(String(repeating: "5a", count: 20))
        let downURL = "http://127.0.0.1:\(try freeLoopbackPort())"
        // An hour's backoff: nothing here depends on how fast this machine is.
        let down = try SymbolSource(.init(url: downURL, timeoutSeconds: 5), option: "--symbol-source", retryDelay: { _ in .seconds(3600) })
        let up = try SymbolSource(
            .init(url: server.baseURL, headers: ["X-Probe": "1"]), option: "--symbol-source", retryDelay: { _ in .seconds(3600) })
        let cache = try FetchedDebugFiles(
            directory: scene.cacheDir, capacityBytes: 64 << 20, sources: [down, up], localStores: [], notFoundRetention: .seconds(3600))

        let first = try await onThread { cache.ensure([program.id]) }
        defer { first.release() }
        #expect(first.pinned == [program.id])
        let said = first.answers[program.id] ?? []
        #expect(said.map(\.source) == [down.name, up.name])
        #expect(said.map(\.outcome) == [.failed, .found], "\(said)")
        #expect(down.counters.errors == 1 && down.counters.requests == 1)
        let size = try fileSize(program.path)
        #expect(up.counters.hits == 1 && up.counters.bytes == size)
        #expect(try await server.metric(#"http_responses_transfer_bytes_count{code="200",type="debuginfo"}"#) == 1)

        // Another id: the down source is passed over (its backoff), the server says 404 twice.
        let second = try await onThread { cache.ensure([nowhere]) }
        let missed = second.answers[nowhere] ?? []
        #expect(missed.map(\.outcome) == [.failed, .notFound], "\(missed)")
        #expect(missed.first?.detail.contains("backing off") == true, "\(missed)")
        #expect(down.counters.requests == 1 && down.counters.skipped == 1, "the down source was not asked again")
        #expect(up.counters.misses == 1)
        let asked = try await server.metric(#"http_requests_total{type="debuginfo"}"#)

        // Asked again: the upstream's miss is remembered and the down source still backs off;
        // nobody is asked, and only the backoff is said again.
        let third = try await onThread { cache.ensure([nowhere]) }
        #expect(third.missing == [nowhere])
        #expect(third.answers[nowhere]?.map(\.source) == [down.name], "\(third.answers)")
        #expect(down.counters.requests == 1 && up.counters.misses == 1)
        #expect(try await server.metric(#"http_requests_total{type="debuginfo"}"#) == asked)
    }

    /// A header of a source that could add another header, or a source URL that is no http(s)
    /// URL, is refused when the source is made, naming the option.
    @Test func aSourceWithAnUnsafeHeaderOrURLIsRefused() throws {
        #expect(throws: ServiceClientError.self) {
            try SymbolSource(.init(url: "http://127.0.0.1:1", headers: ["X-A": "1\r\nX-B: 2"]), option: "--symbol-source", retryDelay: { _ in .zero })
        }
        #expect(throws: ServiceClientError.self) {
            try SymbolSource(.init(url: "http://127.0.0.1:1", headers: ["X A": "1"]), option: "--symbol-source", retryDelay: { _ in .zero })
        }
        do {
            _ = try SymbolSource(.init(url: "ftp://example.invalid/"), option: "--symbol-source", retryDelay: { _ in .zero })
            Issue.record("an ftp URL was taken")
        } catch {
            #expect(error.description.contains("--symbol-source"), "\(error)")
        }
    }
}
