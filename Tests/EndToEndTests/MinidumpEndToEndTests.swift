import Foundation
import TestSupport
import Testing

/// Minidumps made here of real crashes (issue 34 §1): C programs built at -O2 with and without
/// frame pointers, crashed under Debian's LLDB 14, which saves the minidump. `stackline serve`
/// takes the dump, a worker unwinds every thread with the stored files' CFI, and the frames of
/// every thread must equal LLDB's own `bt all` of the same dump: the independent unwinder.
@Suite(.serialized) struct MinidumpEndToEndTests {
    static let source = """
        #include <pthread.h>
        #include <unistd.h>
        __attribute__((noinline)) void leaf(int *p) { *p = 42; }
        __attribute__((noinline)) void middle(int *p) { leaf(p); __asm__ volatile(""); }
        __attribute__((noinline)) void top(int *p) { middle(p); __asm__ volatile(""); }
        static void *parked(void *arg) { for (;;) pause(); return arg; }
        int main(int argc, char **argv) {
          pthread_t t;
          pthread_create(&t, 0, parked, 0);
          usleep(20000);
          top(argc > 5 ? (int *)argv : 0);
          return 0;
        }
        """

    /// C++: an exception nobody catches, through libstdc++'s and libgcc's unwinder into abort().
    static let cppSource = """
        #include <chrono>
        #include <stdexcept>
        #include <thread>
        #include <unistd.h>
        struct Parser {
          __attribute__((noinline)) int parse(int depth) { if (depth == 0) throw std::runtime_error("bad input"); return parse(depth - 1) + 1; }
        };
        __attribute__((noinline)) int run(Parser &p) noexcept { return p.parse(3); }
        int main() {
          std::thread t([] { for (;;) pause(); });
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          Parser p;
          return run(p);
        }
        """

    /// Swift: a failed precondition (a trap), with a Foundation thread asleep.
    static let swiftSource = """
        import Foundation
        struct Account { var balance: Int }
        @inline(never) func withdraw(_ amount: Int, from account: inout Account) {
          precondition(account.balance >= amount, "overdrawn")
          account.balance -= amount
        }
        @inline(never) func settle(_ accounts: inout [Account]) { for i in accounts.indices { withdraw(100, from: &accounts[i]) } }
        let t = Thread { while true { sleep(1) } }
        t.start()
        usleep(20000)
        var accounts = [Account(balance: 500), Account(balance: 50)]
        settle(&accounts)
        print(accounts)
        """

    struct Variant: CustomTestStringConvertible, Sendable {
        var name: String
        var compiler: String
        var source: String
        var fileExtension: String
        var flags: [String]
        var testDescription: String { name }
    }

    static let variants = [
        Variant(name: "c-omit-fp", compiler: "gcc", source: source, fileExtension: "c", flags: ["-O2", "-fomit-frame-pointer", "-pthread"]),
        Variant(name: "c-keep-fp", compiler: "gcc", source: source, fileExtension: "c", flags: ["-O2", "-fno-omit-frame-pointer", "-pthread"]),
        Variant(name: "cpp-omit-fp", compiler: "g++", source: cppSource, fileExtension: "cpp", flags: ["-O2", "-fomit-frame-pointer", "-pthread"]),
        Variant(name: "swift", compiler: "swiftc", source: swiftSource, fileExtension: "swift", flags: ["-O"]),
    ]

    struct Dump {
        var program: String
        var path: String
    }

    /// Builds a C program with `flags` and lets LLDB save a stack-style minidump of its crash.
    static func make(in dir: TempDirectory, name: String, flags: [String]) throws -> Dump {
        try make(in: dir, Variant(name: name, compiler: "gcc", source: source, fileExtension: "c", flags: flags + ["-pthread"]))
    }

    static func make(in dir: TempDirectory, _ variant: Variant) throws -> Dump {
        let name = variant.name
        let source = dir.file("\(name).\(variant.fileExtension)")
        try variant.source.write(toFile: source, atomically: true, encoding: .utf8)
        let program = dir.file(name)
        let cc = try runProcess(variant.compiler, variant.flags + ["-g", source, "-o", program], timeout: 300)
        guard cc.succeeded else { throw TestSupportError("\(variant.compiler): \(cc.stderr)") }
        let dump = dir.file("\(name).dmp")
        let lldb = try runProcess(
            "lldb-14", ["--batch", "-o", "run", "-k", "process save-core --plugin-name=minidump --style=stack \(dump)", program],
            timeout: 120)
        guard FileManager.default.fileExists(atPath: dump) else { throw TestSupportError("lldb saved no minidump: \(lldb.stdout)\(lldb.stderr)") }
        return Dump(program: program, path: dump)
    }

    /// LLDB's `bt all` of the dump: each thread's frame addresses, in its thread order.
    /// `settings`: LLDB settings applied before the dump loads (`-O`).
    static func lldbFrames(_ dump: Dump, settings: [String] = []) throws -> [[UInt64]] {
        let options = settings.flatMap { ["-O", "settings set \($0)"] }
        let out = try runProcess("lldb-14", ["--batch"] + options + ["-c", dump.path, dump.program, "-o", "bt all"], timeout: 120)
        var threads: [[UInt64]] = []
        // LLDB lists each inlined call as a frame of its own (`[inlined]`); the first of a chain
        // shows the machine frame's address, which the concrete frame ending the chain does not.
        var chain: UInt64?
        for line in out.stdout.split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "* ", with: "")
            if text.hasPrefix("thread #") {
                threads.append([])
                chain = nil
            } else if text.hasPrefix("frame #"), let colon = text.range(of: ": 0x") {
                let hex = text[colon.upperBound...].prefix { $0.isHexDigit }
                guard let address = UInt64(hex, radix: 16), !threads.isEmpty else { continue }
                if text.contains(" [inlined]") {
                    if chain == nil { chain = address }
                    continue
                }
                threads[threads.count - 1].append(chain ?? address)
                chain = nil
            }
        }
        guard !threads.isEmpty else { throw TestSupportError("lldb printed no threads: \(out.stdout)") }
        return threads
    }

    /// The shared libraries the C program ran with, as LLDB's dump lists them (libc, the loader).
    static let libraries = ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]

    /// The files of every module LLDB's frames fall in (`image list` names their paths).
    static func modulesInFrames(_ dump: Dump, settings: [String] = []) throws -> [String] {
        let options = settings.flatMap { ["-O", "settings set \($0)"] }
        let images = try runProcess("lldb-14", ["--batch"] + options + ["-c", dump.path, dump.program, "-o", "image list"], timeout: 120)
        var paths: [String: String] = [:]
        for line in images.stdout.split(separator: "\n") where line.hasPrefix("[") {
            guard let path = line.split(separator: " ").last.map(String.init), path.hasPrefix("/") else { continue }
            paths[(path as NSString).lastPathComponent] = path
        }
        let bt = try runProcess("lldb-14", ["--batch"] + options + ["-c", dump.path, dump.program, "-o", "bt all"], timeout: 120)
        var used: Set<String> = []
        for line in bt.stdout.split(separator: "\n") where line.contains("frame #") {
            guard let tick = line.firstIndex(of: "`"), let space = line[..<tick].lastIndex(of: " ") else { continue }
            if let path = paths[String(line[line.index(after: space)..<tick])] { used.insert(path) }
        }
        return used.sorted()
    }

    /// The processed report's threads: the outermost level of each frame (address, trust).
    static func frames(_ report: [String: Any]) -> [[(address: UInt64, trust: String?, function: String?, image: String?)]] {
        ((report["threads"] as? [[String: Any]]) ?? []).map { thread in
            ((thread["frames"] as? [[String: Any]]) ?? []).filter { ($0["inlined"] as? Bool) != true }.compactMap { frame in
                guard let text = frame["address"] as? String, let address = UInt64(text.dropFirst(2), radix: 16) else { return nil }
                return (address, frame["trust"] as? String, frame["function"] as? String, frame["image"] as? String)
            }
        }
    }

    /// A dump as a crash reporter uploads one: gzip-compressed (LLDB copies whole 8 MiB thread
    /// stacks, mostly zeros; the request body limit is 16 MiB, the inflated report's 64 MiB).
    static func post(_ server: ServerProcess, _ dump: Data, token: String) throws -> HTTPAnswer {
        try server.curl("POST", "/api/v1/reports", token: token, body: try gzipped(dump), headers: ["Content-Encoding: gzip"])
    }

    func processed(_ server: ServerProcess, _ id: Int, token: String, where condition: ([String: Any]) -> Bool = { _ in true }) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(240)
        while Date() < deadline {
            let answer = try server.curl("GET", "/api/v1/reports/\(id)", token: token)
            if answer.status == 200, let json = answer.json, json["status"] as? String != nil, condition(json) { return json }
            Thread.sleep(forTimeInterval: 0.3)
        }
        throw TestSupportError("report \(id) was not processed")
    }

    @Test(arguments: variants)
    func everyThreadUnwindsAsLLDBUnwindsIt(_ variant: Variant) throws {
        let h = try Harness()
        let dump = try Self.make(in: h.dir, variant)
        let expected = try Self.lldbFrames(dump)
        #expect(expected.count == 2 && expected[0].count >= 5, "\(expected)")
        let modules = try Self.modulesInFrames(dump)
        #expect(modules.contains(dump.program), "\(modules)")
        for file in modules {
            let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, file])
            #expect(added.status == 0, "\(file): \(added.stderr)")
        }
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let server = try h.startServer(Harness.nativeDumpServer)
        let posted = try Self.post(server, try Data(contentsOf: URL(fileURLWithPath: dump.path)), token: ingest)
        #expect(posted.status == 202, "\(posted)")
        let id = try #require(posted.json?["id"] as? Int, "\(posted)")
        let report = try processed(server, id, token: read)
        #expect(report["format"] as? String == "minidump")
        let threads = Self.frames(report)
        #expect(threads.map { $0.map(\.address) } == expected, "ours: \(threads.map { $0.map { String($0.address, radix: 16) } })")
        // Every frame falls in a module: their extents come from the dump's copy of the
        // process's maps (LLDB's module sizes are too small), whatever name the map gives the file.
        #expect(threads.allSatisfy { $0.allSatisfy { $0.image != nil } }, "\(threads.map { $0.map(\.image) })")
        // How each frame was found: the context, then CFI (every module here has .eh_frame).
        for thread in threads {
            #expect(thread.first?.trust == "context")
            #expect(thread.dropFirst().allSatisfy { $0.trust == "cfi" }, "\(thread.map(\.trust))")
        }
        // The crashed thread is LLDB's first: the C program's stopped by SIGSEGV in leaf, called
        // by middle, top, main; the C++ one's by abort (SIGABRT); the Swift one's by its trap.
        let crashed = (report["threads"] as? [[String: Any]])?.firstIndex { $0["crashed"] as? Bool == true }
        #expect(crashed == 0)
        let signal = (report["exception"] as? [String: Any])?["signal"] as? String
        switch variant.compiler {
        case "gcc":
            #expect(signal == "SIGSEGV")
            #expect(threads[0].prefix(4).map(\.function) == ["leaf", "middle", "top", "main"], "\(threads[0].map(\.function))")
        case "g++":
            #expect(signal == "SIGABRT")
            #expect(threads[0].contains { $0.function == "run(Parser&)" }, "\(threads[0].map(\.function))")
        default:
            #expect(signal == "SIGILL" || signal == "SIGTRAP", "\(signal ?? "none")")
            #expect(threads[0].first?.function?.contains("withdraw") == true, "\(threads[0].map(\.function))")
        }
        let text = try server.curl("GET", "/api/v1/reports/\(id)?format=text", token: read)
        #expect(String(decoding: text.body, as: UTF8.self).contains("(found by cfi)"))

        // The same dump as an SDK record's payload (gzip, base64) unwinds the same.
        guard variant.name == "c-omit-fp" else { return }
        #expect(try h.stackline(["namespaces", "set-key", "native"]).status == 0)
        let record = sdkRecord(
            "dump-1", type: "appCrash", namespace: "native", payload: try sdkPayload(try Data(contentsOf: URL(fileURLWithPath: dump.path))))
        let batch = try server.curl("POST", "/api/v1/ingest", token: ingest, body: try sdkBatch([record]))
        let sdkId = try #require(((batch.json?["records"] as? [[String: Any]])?.first?["ids"] as? [Int])?.first, "\(batch)")
        #expect(Self.frames(try processed(server, sdkId, token: read)).map { $0.map(\.address) } == expected)
    }

    /// The program's file is uploaded after the dump: the report first lists it missing, and
    /// once it is stored the report is processed again and unwinds as LLDB does.
    @Test func aModuleWhoseFileArrivesLaterIsUnwoundThen() throws {
        let h = try Harness()
        let dump = try Self.make(in: h.dir, name: "later", flags: ["-O2", "-fomit-frame-pointer"])
        let expected = try Self.lldbFrames(dump)
        for file in Self.libraries {
            #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, file]).status == 0)
        }
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let symbols = try h.token("symbols")
        let server = try h.startServer(Harness.nativeDumpServer)
        let posted = try Self.post(server, try Data(contentsOf: URL(fileURLWithPath: dump.path)), token: ingest)
        let id = try #require(posted.json?["id"] as? Int, "\(posted)")
        let first = try processed(server, id, token: read)
        let buildId = try #require(try readelfBuildID(dump.program))
        #expect((first["missingBuildIds"] as? [String])?.contains(buildId) == true, "\(first["missingBuildIds"] ?? "none")")
        #expect(Self.frames(first)[0].first?.address == expected[0][0])
        // Without the program's CFI its callers come from the frame pointer or a scan.
        #expect(Self.frames(first)[0].dropFirst().contains { $0.trust != "cfi" }, "\(Self.frames(first)[0].map(\.trust))")

        let upload = try server.curl(
            "POST", "/api/v1/symbols?name=later", token: symbols, body: try Data(contentsOf: URL(fileURLWithPath: dump.program)))
        #expect(upload.status == 200, "\(upload)")
        let again = try processed(server, id, token: read) { Self.frames($0)[0].prefix(4).map(\.function) == ["leaf", "middle", "top", "main"] }
        #expect(Self.frames(again).map { $0.map(\.address) } == expected)
        #expect(Self.frames(again)[0].dropFirst().allSatisfy { $0.trust == "cfi" })
    }

    /// A library in the middle of the stack has no file in the store: the walk cannot take its
    /// frames' callers from CFI, so it scans the stack for the next return address and goes on
    /// with CFI from there (as Breakpad's stackwalker does). Every frame LLDB finds with all the
    /// files is among ours, in order; once the library's file arrives, the walk equals LLDB's.
    @Test func aLibraryWithoutItsFileIsScannedAcrossAndTheWalkGoesOn() throws {
        let h = try Harness()
        let flags = ["-O2", "-g", "-fomit-frame-pointer", "-fPIC"]
        let sources = [
            "top.c": "__attribute__((noinline)) void top_crash(int *p) { *p = 7; __asm__ volatile(\"\"); }\n",
            "mid.c": """
                void top_crash(int *p);
                __attribute__((noinline)) void mid_b(int *p) { top_crash(p); __asm__ volatile(""); }
                __attribute__((noinline)) void mid_a(int *p) { char pad[64]; __asm__ volatile("" : : "r"(pad)); mid_b(p); __asm__ volatile(""); }
                """,
            "main.c": "void mid_a(int *p);\nint main(int argc, char **argv) { mid_a(argc > 5 ? (int *)argv : 0); return 0; }\n",
        ]
        for (name, text) in sources { try text.write(toFile: h.dir.file(name), atomically: true, encoding: .utf8) }
        let top = h.dir.file("libtop.so"), mid = h.dir.file("libmid.so"), program = h.dir.file("midscan")
        for (args, what) in [
            (flags + ["-shared", h.dir.file("top.c"), "-o", top], "libtop"),
            (flags + ["-shared", h.dir.file("mid.c"), "-o", mid, "-L", h.dir.path, "-ltop", "-Wl,-rpath," + h.dir.path], "libmid"),
            (flags + [h.dir.file("main.c"), "-o", program, "-L", h.dir.path, "-lmid", "-ltop", "-Wl,-rpath," + h.dir.path], "main"),
        ] {
            let cc = try runProcess("gcc", args, timeout: 300)
            guard cc.succeeded else { throw TestSupportError("\(what): \(cc.stderr)") }
        }
        let path = h.dir.file("midscan.dmp")
        let lldb = try runProcess(
            "lldb-14", ["--batch", "-o", "run", "-k", "process save-core --plugin-name=minidump --style=stack \(path)", program], timeout: 120)
        guard FileManager.default.fileExists(atPath: path) else { throw TestSupportError("lldb saved no minidump: \(lldb.stdout)\(lldb.stderr)") }
        let dump = Dump(program: program, path: path)
        let expected = try Self.lldbFrames(dump)
        for file in [program, top] + Self.libraries {
            #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, file]).status == 0, "\(file)")
        }
        let ingest = try h.token("ingest"), read = try h.token("read"), symbols = try h.token("symbols")
        let server = try h.startServer(Harness.nativeDumpServer)
        let posted = try Self.post(server, try Data(contentsOf: URL(fileURLWithPath: path)), token: ingest)
        let id = try #require(posted.json?["id"] as? Int, "\(posted)")
        let first = Self.frames(try processed(server, id, token: read))[0]
        // LLDB's crashed thread: top_crash, mid_b, mid_a, main, then libc down to _start.
        #expect(expected[0].count >= 6, "\(expected)")
        var rest = first.map(\.address)[...]
        for address in expected[0] {
            let at = rest.firstIndex(of: address)
            #expect(at != nil, "LLDB's 0x\(String(address, radix: 16)) is not among ours: \(first.map { String($0.address, radix: 16) })")
            if let at { rest = rest[(at + 1)...] }
        }
        // libmid's callers were found by scanning; main's caller again by CFI (libc has some).
        #expect(first.contains { $0.trust == "scan" }, "\(first.map(\.trust))")
        #expect(first.last?.trust == "cfi" && first.last?.address == expected[0].last, "\(first.map(\.trust))")

        let upload = try server.curl("POST", "/api/v1/symbols?name=libmid.so", token: symbols, body: try Data(contentsOf: URL(fileURLWithPath: mid)))
        #expect(upload.status == 200, "\(upload)")
        // Processed again once the file is stored: libmid's frames gain names, and every caller
        // is found by CFI.
        let again = try processed(server, id, token: read) { Self.frames($0)[0].prefix(4).map(\.function) == ["top_crash", "mid_b", "mid_a", "main"] }
        #expect(Self.frames(again).map { $0.map(\.address) } == expected)
        #expect(Self.frames(again)[0].dropFirst().allSatisfy { $0.trust == "cfi" }, "\(Self.frames(again)[0].map(\.trust))")
    }

    /// No file of any module is stored (as for a macOS or iOS dump, whose Mach-O files libdwfl
    /// cannot read): the walk follows the frame-pointer chain the program keeps, and the
    /// frames it finds are LLDB's, each marked as found by the frame pointer.
    @Test func withNoFileStoredTheFramePointerChainIsWalked() throws {
        let h = try Harness()
        let dump = try Self.make(in: h.dir, name: "fponly", flags: ["-O2", "-fno-omit-frame-pointer"])
        let expected = try Self.lldbFrames(dump)
        let ingest = try h.token("ingest"), read = try h.token("read")
        let server = try h.startServer(Harness.nativeDumpServer)
        let posted = try Self.post(server, try Data(contentsOf: URL(fileURLWithPath: dump.path)), token: ingest)
        let id = try #require(posted.json?["id"] as? Int, "\(posted)")
        let ours = Self.frames(try processed(server, id, token: read))[0]
        // leaf calls nothing and keeps no frame record: its return into middle is on the stack
        // (a guess, marked so); middle, top and main keep records, and main's holds its return
        // into libc.
        #expect(Array(ours.prefix(5).map(\.address)) == Array(expected[0].prefix(5)), "ours \(ours.map { String($0.address, radix: 16) })")
        #expect(ours.prefix(5).map(\.trust) == ["context", "scan", "frame pointer", "frame pointer", "frame pointer"])
    }

    /// A dump whose stack memory is zeroed still gives each thread its context frame, and the
    /// walk says where it stopped; a dump cut short is refused with the reason.
    @Test func aDamagedDumpGivesAPartialStackAndACutOneIsRefused() throws {
        let h = try Harness()
        let dump = try Self.make(in: h.dir, name: "damaged", flags: ["-O2", "-fomit-frame-pointer"])
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dump.path)))
        // The thread list (stream type 3) and its first thread's stack: MINIDUMP_THREAD's stack
        // descriptor is at 24 (start, size at +8, offset at +12), read here from the layout.
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        let streams = u32(8), directory = u32(12)
        let list = try #require((0..<streams).map { directory + 12 * $0 }.first { u32($0) == 3 }.map { u32($0 + 8) })
        let stackSize = u32(list + 4 + 32), stackOffset = u32(list + 4 + 36)
        #expect(stackSize > 4096)
        for i in stackOffset..<stackOffset + stackSize { bytes[i] = 0xff }
        for file in [dump.program] + Self.libraries {
            #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, file]).status == 0)
        }
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let server = try h.startServer(Harness.nativeDumpServer)
        let posted = try Self.post(server, Data(bytes), token: ingest)
        let id = try #require(posted.json?["id"] as? Int, "\(posted)")
        let report = try processed(server, id, token: read)
        let threads = Self.frames(report)
        #expect(threads.count == 2)
        let lldb = try Self.lldbFrames(dump)
        #expect(threads[0].first?.address == lldb[0][0])
        #expect(threads[0].first?.trust == "context")
        #expect(((report["warnings"] as? [String]) ?? []).contains { $0.contains("thread 0: the walk stopped") }, "\(report["warnings"] ?? "none")")

        // Cut short by its last streams (LLDB writes the thread list and memory after the stacks).
        let cut = Data(bytes.prefix(bytes.count - 4096))
        let refused = try Self.post(server, cut, token: ingest)
        #expect(refused.status == 400 || refused.status == 422, "\(refused)")
        #expect((refused.json?["error"] as? String)?.contains("malformed minidump report") == true, "\(refused)")
    }
}
