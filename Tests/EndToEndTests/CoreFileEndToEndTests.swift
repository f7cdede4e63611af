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
        let server = try h.startServer(Harness.nativeDumpServer)
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

    /// An arm64 program, built static by Debian's cross compiler (with and without frame
    /// pointers), crashed under qemu-user, which writes the guest's core itself. Its core names
    /// no files, so `stackline submit --exe` adds the program's; the worker then unwinds every
    /// thread with libdwfl's arm64 backend, and each must equal LLDB's backtrace of the same core.
    @Test(arguments: ["-fomit-frame-pointer", "-fno-omit-frame-pointer"])
    func anArm64CoreFromQemuUnwindsAsLLDBUnwindsIt(_ framePointers: String) throws {
        let h = try Harness()
        let source = h.dir.file("arm64.c")
        try MinidumpEndToEndTests.source.write(toFile: source, atomically: true, encoding: .utf8)
        let program = h.dir.file("arm64-crash")
        let cc = try runProcess("aarch64-linux-gnu-gcc", ["-O2", "-g", framePointers, "-static", "-pthread", source, "-o", program], timeout: 300)
        guard cc.succeeded else { throw TestSupportError("aarch64-linux-gnu-gcc: \(cc.stderr)") }
        let run = h.dir.file("qemu-run")
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        // Small stacks keep the core near a megabyte; the host's own core of qemu (it dies of the
        // guest's signal) is removed.
        let qemu = try runProcess(
            "sh", ["-c", "ulimit -c unlimited; ulimit -s 256; qemu-aarch64 -s 262144 \"$0\"; rm -f core", program],
            currentDirectory: run, timeout: 120)
        let core = try #require(
            try FileManager.default.contentsOfDirectory(atPath: run).first { $0.hasPrefix("qemu_") && $0.hasSuffix(".core") }.map { run + "/" + $0 },
            "qemu wrote no core: \(qemu.summary)")
        let expected = try MinidumpEndToEndTests.lldbFrames(MinidumpEndToEndTests.Dump(program: program, path: core))
        #expect(expected.count == 2 && expected[0].count >= 6, "\(expected)")

        // Without the program the core names no module; a program that is not the one that ran
        // is refused (its entry point is elsewhere).
        let other = h.dir.file("other")
        try "int main(void) { return 3; }\n".write(toFile: other + ".c", atomically: true, encoding: .utf8)
        #expect(try runProcess("aarch64-linux-gnu-gcc", ["-O2", "-static", other + ".c", "-o", other], timeout: 300).succeeded)
        let wrong = try h.stackline(["submit", "--exe", other, core])
        #expect(wrong.status != 0 && wrong.stderr.contains("is not the program this core is of"), "\(wrong.stderr)")
        #expect(try h.stackline(["submit", "--exe", program, source]).stderr.contains("--exe applies to core files"))

        #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, program]).status == 0)
        let submitted = try h.stackline(["submit", "--exe", program, core])
        let id = try #require(Int(submitted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(submitted.stderr)")
        let read = try h.token("read")
        let server = try h.startServer(Harness.nativeDumpServer)
        let report = try MinidumpEndToEndTests().processed(server, id, token: read)
        #expect(report["arch"] as? String == "arm64")
        let ours = MinidumpEndToEndTests.frames(report)
        #expect(ours.map { $0.map(\.address) } == expected, "ours: \(ours.map { $0.map { String($0.address, radix: 16) } })")
        for frames in ours {
            #expect(frames.first?.trust == "context" && frames.dropFirst().allSatisfy { $0.trust == "cfi" }, "\(frames.map(\.trust))")
        }
        #expect(ours[0].prefix(4).map(\.function) == ["leaf", "middle", "top", "main"], "\(ours[0].map(\.function))")
        #expect((report["exception"] as? [String: Any])?["signal"] as? String == "SIGSEGV")
    }

    /// A Swift program with a Foundation thread: gdb's core of it is past the 64 MiB a report may
    /// be (the runtime's and Foundation's heaps). `stackline submit` keeps what the unwinder
    /// reads (the notes, each thread's stack from its pointer up, each mapped ELF file's first
    /// page), and every thread still unwinds as LLDB unwinds the whole core.
    @Test func aCorePastTheReportLimitKeepsItsStacksAndUnwindsAsLLDBUnwindsIt() throws {
        let h = try Harness()
        let made = try Self.make(in: h.dir, MinidumpEndToEndTests.variants[3])
        let size = try #require(try FileManager.default.attributesOfItem(atPath: made.core)[.size] as? Int)
        #expect(size > 64 << 20, "the core is \(size) bytes")
        let expected = try MinidumpEndToEndTests.lldbFrames(MinidumpEndToEndTests.Dump(program: made.program, path: made.core))
        let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, made.program] + Self.libraries(of: made.program))
        #expect(added.status == 0, "\(added.stderr)")
        let submitted = try h.stackline(["submit", made.core])
        let id = try #require(Int(submitted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(submitted.stderr)")
        #expect(submitted.stderr.contains("kept its stacks and headers"), "\(submitted.stderr)")
        let read = try h.token("read")
        let server = try h.startServer(Harness.nativeDumpServer)
        let report = try MinidumpEndToEndTests().processed(server, id, token: read)
        let ours = MinidumpEndToEndTests.frames(report)
        #expect(ours.map { $0.map(\.address) } == expected, "ours: \(ours.map { $0.map { String($0.address, radix: 16) } })")
        #expect(ours.first?.first?.function?.contains("withdraw") == true, "\(ours.first?.map(\.function) ?? [])")
        // What was stored is the reduced core, well under the limit.
        let raw = try server.curl("GET", "/reports/\(id)/raw", token: read)
        #expect(raw.status == 200 && raw.body.count < 16 << 20, "\(raw.status), \(raw.body.count) bytes")
    }
}
