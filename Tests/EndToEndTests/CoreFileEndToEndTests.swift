import Foundation
import TestSupport
import Testing

/// Linux core files made here (issue 34 §2): the minidump tests' C and C++ programs, run under
/// gdb, which writes the core of the crashed process (`generate-core-file`, as `gcore` does).
/// `stackline serve` takes the core, a worker unwinds every thread with the stored files' CFI,
/// and each thread's frames must equal LLDB's backtrace of the same core, thread by thread. (The Swift program's core, with the Swift runtime's and Foundation's
/// memory, is past the 16 MiB request body even gzip-compressed: docs/native.md.)
@Suite(.serialized) struct CoreFileEndToEndTests {
    typealias Variant = MinidumpEndToEndTests.Variant

    /// gdb as a batch tool that asks nothing and fetches nothing (debuginfod off: its answers
    /// must come from the files on this machine).
    static let gdbSettings = ["-nx", "-batch", "-ex", "set debuginfod enabled off", "-ex", "set confirm off"]

    /// Runs gdb with no signal blocked: the test runner's threads block most signals, and a gdb
    /// that inherits a blocked SIGCHLD never learns that its inferior stopped.
    static func gdb(_ arguments: [String]) throws -> ProcessOutput {
        let unblocked = "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execvp(sys.argv[1], sys.argv[1:])"
        return try runProcess("python3", ["-c", unblocked, "gdb"] + gdbSettings + arguments, timeout: 120)
    }

    /// Builds the program and lets gdb write the core of its crash.
    static func make(in dir: TempDirectory, _ variant: Variant) throws -> (program: String, core: String) {
        let source = dir.file("\(variant.name).\(variant.fileExtension)")
        try variant.source.write(toFile: source, atomically: true, encoding: .utf8)
        let program = dir.file(variant.name)
        let cc = try runProcess(variant.compiler, variant.flags + ["-g", source, "-o", program], timeout: 300)
        guard cc.succeeded else { throw TestSupportError("\(variant.compiler): \(cc.stderr)") }
        let core = dir.file("\(variant.name).core")
        let gdb = try Self.gdb(["-ex", "run", "-ex", "generate-core-file \(core)", program])
        guard FileManager.default.fileExists(atPath: core) else { throw TestSupportError("gdb wrote no core: \(gdb.stdout)\(gdb.stderr)") }
        return (program, core)
    }

    /// The shared objects the program loads, by ldd: what a team stores for its service.
    static func libraries(of program: String) throws -> [String] {
        let out = try runProcess("ldd", [program])
        return out.stdout.split(separator: "\n").compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("/") }.map(String.init)
        }
    }

    @Test(arguments: [MinidumpEndToEndTests.variants[0], MinidumpEndToEndTests.variants[2]])
    func everyThreadUnwindsAsLLDBUnwindsIt(_ variant: Variant) throws {
        let h = try Harness()
        let made = try Self.make(in: h.dir, variant)
        // LLDB reads ELF cores too, and lists an inlined chain as one machine frame here (gdb's
        // backtrace gives inlined calls addresses of their own, which no unwinder walks).
        let expected = try MinidumpEndToEndTests.lldbFrames(MinidumpEndToEndTests.Dump(program: made.program, path: made.core))
        #expect(expected.count == 2, "\(expected)")
        let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, made.program] + Self.libraries(of: made.program))
        #expect(added.status == 0, "\(added.stderr)")
        let ingest = try h.token("ingest")
        let read = try h.token("read")
        let server = try h.startServer(["--workers", "1"])
        let posted = try MinidumpEndToEndTests.post(server, try Data(contentsOf: URL(fileURLWithPath: made.core)), token: ingest)
        #expect(posted.status == 202, "\(posted)")
        let id = try #require(posted.json?["id"] as? Int, "\(posted)")
        let report = try MinidumpEndToEndTests().processed(server, id, token: read)
        #expect(report["format"] as? String == "elf-core")
        let threads = (report["threads"] as? [[String: Any]]) ?? []
        let ours = MinidumpEndToEndTests.frames(report)
        #expect(threads.count == expected.count)
        for (n, frames) in ours.enumerated() {
            #expect(frames.map(\.address) == expected[n], "thread \(n): \(frames.map { String($0.address, radix: 16) })")
            #expect(frames.first?.trust == "context" && frames.dropFirst().allSatisfy { $0.trust == "cfi" }, "\(frames.map(\.trust))")
            #expect(frames.allSatisfy { $0.image != nil }, "\(frames.map(\.image))")
        }
        // The first thread took the signal (gdb's core says so as the kernel's does).
        #expect(threads.first?["crashed"] as? Bool == true)
        let signal = (report["exception"] as? [String: Any])?["signal"] as? String
        #expect(signal == (variant.compiler == "gcc" ? "SIGSEGV" : "SIGABRT"), "\(signal ?? "none")")
    }
}
