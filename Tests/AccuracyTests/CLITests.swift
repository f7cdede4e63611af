import Foundation
import Testing
import TestSupport

/// Bad inputs to the CLI: each must fail with a one-line error, a non-zero exit status,
/// and leave the symbol store exactly as it was.
@Suite("CLI bad inputs leave the store untouched")
struct CLIBadInputTests {
    enum BadInput: String, CaseIterable, Sendable, CustomStringConvertible {
        case textFile = "symbols add: a text file"
        case truncatedElf = "symbols add: a truncated ELF file"
        case elfWithoutBuildID = "symbols add: an ELF file without a build-id"
        case unknownBuildID = "lookup: an unknown build-id"
        case nonHexAddressArgument = "lookup: a non-hex address argument"
        case nonHexAddressStdin = "lookup: a non-hex address on stdin"
        var description: String { rawValue }
    }

    @Test(arguments: BadInput.allCases)
    func badInputFailsCleanly(_ input: BadInput) throws {
        let set = try sharedElfFixtures.get()
        let good = try set.named("c-gcc-pie")
        let scratch = try makeTemporaryDirectory(prefix: "stackline-badinput")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let store = scratch + "/store"
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        // A store that already holds something, so "changed nothing" means something.
        let seeded = try runStackline(["symbols", "add", "--symbols", store, good.stripped!, good.debugFile!])
        try #require(seeded.succeeded, "seeding the store failed: \(seeded.summary)")
        let before = directorySnapshot(store)

        let result: ProcessOutput
        switch input {
        case .textFile:
            let path = scratch + "/notes.txt"
            try "these are not symbols\njust text\n".write(toFile: path, atomically: true, encoding: .utf8)
            result = try runStackline(["symbols", "add", "--symbols", store, path])
        case .truncatedElf:
            // The first 2,000 bytes of a real ELF file: headers and notes, no section table.
            let path = scratch + "/truncated.debug"
            let bytes = try Data(contentsOf: URL(fileURLWithPath: good.unstripped)).prefix(2000)
            try bytes.write(to: URL(fileURLWithPath: path))
            result = try runStackline(["symbols", "add", "--symbols", store, path])
        case .elfWithoutBuildID:
            let noID = try set.named("no-build-id")
            result = try runStackline(["symbols", "add", "--symbols", store, noID.unstripped])
        case .unknownBuildID:
            result = try runStackline([
                "lookup", "--symbols", store, "--build-id", "0123456789abcdef0123456789abcdef01234567", "--json", "0x1000",
            ])
        case .nonHexAddressArgument:
            result = try runStackline(["lookup", "--symbols", store, "--build-id", good.buildID!, "0xZZ12"])
        case .nonHexAddressStdin:
            result = try runStackline(["lookup", "--symbols", store, "--build-id", good.buildID!, "--json"], stdin: "0x1000\nmain+4\n")
        }

        #expect(result.status != 0, "\(input) should fail, but exited 0; stdout: \(result.stdout.prefix(300))")
        let errorLines = result.stderr.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(errorLines.count == 1, "\(input) should print a one-line error on stderr, printed \(errorLines.count) lines: \(errorLines.prefix(6))")
        // A batch on stdin may still answer its good lines; otherwise nothing goes to stdout.
        if input != .nonHexAddressStdin {
            #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(input) printed to stdout: \(result.stdout.prefix(300))")
        }
        #expect(directorySnapshot(store) == before, "\(input) changed the store")
    }
}

/// A real crash: the crash fixture prints its load base and the faulting pc of a SIGSEGV;
/// `stackline lookup --load-address BASE PC` must say what llvm-symbolizer says at the file
/// address, and what the source says (the line marked "faults here").
@Suite("lookup --load-address at a real crash address")
struct LoadAddressTests {
    @Test func crashAddressSymbolicatesLikeTheOracle() throws {
        let set = try sharedElfFixtures.get()
        let crash = try set.named("crash-gcc")
        let run = try runProcess(crash.stripped!, [])
        try #require(run.status == 139, "the crash fixture should exit 139 from its SIGSEGV handler: \(run.summary)")
        var values: [String: UInt64] = [:]
        for line in run.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let v = UInt64(parts[1].replacingOccurrences(of: "0x", with: ""), radix: 16) {
                values[String(parts[0])] = v
            }
        }
        let base = try #require(values["base"], "no base line in: \(run.stdout)")
        let pc = try #require(values["pc"], "no pc line in: \(run.stdout)")
        let function = try #require(values["function"], "no function line in: \(run.stdout)")

        // ELF: bias = lowest mapping − first PT_LOAD p_vaddr rounded down to the page.
        let bias = base - (try firstLoadVaddr(crash.unstripped) & ~0xfff)
        let store = try makeTemporaryDirectory(prefix: "stackline-store")
        defer { try? FileManager.default.removeItem(atPath: store) }
        let added = try runStackline(["symbols", "add", "--symbols", store, crash.stripped!, crash.debugFile!])
        try #require(added.succeeded, "symbols add failed: \(added.summary)")

        let mine = try StacklineLookup.lookup(store: store, buildID: crash.buildID!, [pc, function], loadAddress: base)
        let oracle = try LLVMSymbolizer.symbolize(crash.unstripped, [pc - bias, function - bias], demangle: true)
        #expect(sameFunctionsAndLines(mine.demangled[0], oracle[0]),
                "crash pc \(hex(pc)) (file address \(hex(pc - bias))): stackline \(describe(mine.demangled[0])), llvm-symbolizer \(describe(oracle[0]))")
        #expect(sameFunctionsAndLines(mine.demangled[1], oracle[1]),
                "crash_here at \(hex(function)): stackline \(describe(mine.demangled[1])), llvm-symbolizer \(describe(oracle[1]))")

        // And from the source itself: the faulting store is inlined into crash_here.
        let source = try String(contentsOfFile: packageRoot + "/Tests/Fixtures/c/crashsite.c", encoding: .utf8)
        let faultLine = try #require(
            source.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains("/* faults here */") }) + 1
        let frames = mine.demangled[0]
        #expect(frames.first?.function == "store_through" && frames.first?.line == faultLine
                && frames.first?.file?.hasSuffix("Tests/Fixtures/c/crashsite.c") == true,
                "innermost frame should be store_through at crashsite.c:\(faultLine): \(describe(frames))")
        #expect(frames.last?.function == "crash_here", "outermost frame should be crash_here: \(describe(frames))")
        #expect(mine.demangled[1].last?.function == "crash_here", "function address: \(describe(mine.demangled[1]))")
    }

    func firstLoadVaddr(_ file: String) throws -> UInt64 {
        let out = try runChecked("readelf", ["-lW", file]).stdout
        for line in out.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.first == "LOAD", parts.count > 2, let v = UInt64(parts[2].dropFirst(2), radix: 16) { return v }
        }
        throw TestSupportError("no PT_LOAD in \(file)")
    }
}

/// `lookup` streams: with stdin still open, the answer to the first address arrives before the
/// input ends, as llvm-symbolizer answers an interactive caller.
@Suite("lookup answers each line before its input ends")
struct LookupStreamingTests {
    @Test func firstAnswerArrivesWhileStdinIsOpen() throws {
        let set = try sharedElfFixtures.get()
        let good = try set.named("c-gcc-pie")
        // The oracle: nm's address of main.
        let nm = try runChecked("nm", [good.unstripped]).stdout
        let mainLine = try #require(nm.split(separator: "\n").first { $0.hasSuffix(" T main") })
        let address = "0x" + mainLine.split(separator: " ")[0]

        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestPaths.stackline)
        process.arguments = ["lookup", "--obj", good.unstripped]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        input.fileHandleForWriting.write(Data((address + "\n").utf8))

        // Read until the answer's blank line; stdin stays open all the while.
        final class Received: @unchecked Sendable { var bytes = Data() }
        let received = Received()
        let answered = DispatchSemaphore(value: 0)
        Thread {
            while true {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                received.bytes.append(chunk)
                if received.bytes.range(of: Data("\n\n".utf8)) != nil { break }
            }
            answered.signal()
        }.start()
        // A hang guard, not a timing assertion: without streaming no answer comes until EOF.
        let arrived = answered.wait(timeout: .now() + 120) == .success
        #expect(arrived, "no answer while stdin was open")
        #expect(process.isRunning, "lookup exited before its input ended")
        if arrived {
            #expect(String(decoding: received.bytes, as: UTF8.self).split(separator: "\n").first == "main")
        }
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
