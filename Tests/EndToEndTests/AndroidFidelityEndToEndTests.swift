import Foundation
import ReportModel
import TestSupport
import Testing

/// Android tombstones end to end, through the real `stackline` binaries: a logcat capture with
/// two crashes becomes two reports, and device symbols survive next to the debug file's answer.
@Suite(.serialized) struct AndroidFidelityEndToEndTests {
    func symbolicated(_ h: Harness, _ id: Int64) throws -> SymbolicatedReport { try FormatsEndToEndTests().symbolicated(h, id) }

    /// ndk-stack's two-crash sample as a threadtime logcat capture: `submit` stores two reports,
    /// each with its own crashed thread, exception, app, arch and OS, as the sample's text says.
    @Test func aCaptureWithTwoCrashesIsTwoReports() throws {
        let h = try Harness()
        let sample = String(decoding: try Data(contentsOf: URL(fileURLWithPath: TestPaths.packageRoot + "/Tests/Fixtures/wild/android/ndk-stack-multiple.txt")), as: UTF8.self)
        let capture = "--------- beginning of crash\n"
            + sample.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { "10-10 21:15:11.123  1177  1177 F DEBUG   : " + $0 }.joined(separator: "\n") + "\n"
        let path = try h.write([Data(capture.utf8)])[0]
        let ids = try h.submit([path])
        #expect(ids.count == 2, "one report per crash")
        let master = try h.startMaster(["--workers", "1", "--once"])
        #expect(try master.waitForExit() == 0)
        guard ids.count == 2 else { return }
        let first = try symbolicated(h, ids[0]), second = try symbolicated(h, ids[1])

        let fingerprint = "Android/aosp_taimen/taimen:R/QT/eng.cferri.20191008.133647:userdebug/test-keys"
        #expect(first.threads.filter(\.crashed).map(\.index) == [11305])
        #expect(first.exception?.signal == "SIGABRT")
        #expect(first.exception?.message == "FORTIFY: strlcat: prevented 5-byte write into 4-byte buffer")
        #expect(first.app?.name == "bionic-unit-tests" && first.arch == "arm64" && first.os == fingerprint)
        #expect(second.threads.filter(\.crashed).map(\.index) == [12664])
        #expect(second.exception?.signal == "SIGSEGV" && second.exception?.code == "SEGV_MAPERR")
        #expect(second.exception?.faultAddress == Address(0x4) && second.exception?.message == nil)
        #expect(second.app?.name == "bionic-unit-tests" && second.arch == "arm" && second.os == fingerprint)

        // No debug file for either libc: the device's names are what the reports show.
        let abort = try #require(first.threads.first?.frames.first)
        #expect(abort.status == .deviceSymbol && abort.function == "abort" && abort.offset == 172, "\(abort)")
        let sem = try #require(second.threads.first?.frames.first)
        #expect(sem.status == .deviceSymbol && sem.offset == 68, "\(sem)")

        // The first group's title carries the abort message (needs the grouping that puts it there).
        let groups = try h.stackline(["groups", "--json"])
        let titles = (try JSONSerialization.jsonObject(with: Data(groups.stdout.utf8)) as? [[String: Any]])?.compactMap { $0["title"] as? String } ?? []
        #expect(titles.count == 2, "\(titles)")
        #expect(titles.contains { $0.contains("FORTIFY: strlcat: prevented 5-byte write into 4-byte buffer") }, "\(titles)")
    }

    /// A tombstone of a real binary whose frames carry device names: the debug file in the store
    /// wins (llvm-symbolizer's answer), the device's name is kept on the raw frame.
    @Test func theDebugFileWinsOverTheDeviceName() throws {
        let h = try Harness()
        let programs = try buildFixturePrograms(h)
        let thread = try plannedThread(programs, count: 8).map { PlannedFrame(program: $0.program, fileAddress: $0.fileAddress, kind: .pc) }
        // Give every frame the name a device would print: deliberately not the real one.
        let text = ReportBuilder.tombstone(thread).split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard let i = (0..<thread.count).first(where: { line.contains(String(format: "#%02d pc ", $0)) }) else { return String(line) }
            return line.replacingOccurrences(of: " (BuildId: ", with: " (device_name_\(i)+\(i + 8)) (BuildId: ")
        }.joined(separator: "\n")
        let path = try h.write([Data(text.utf8)])[0]
        let ids = try h.submit([path])
        let master = try h.startMaster(["--workers", "1", "--once"])
        #expect(try master.waitForExit() == 0)
        let report = try symbolicated(h, try #require(ids.first))
        let crashed = try #require(report.threads.first { $0.crashed })
        for (i, f) in thread.enumerated() {
            let oracle = try llvmSymbolizer(f.program.path, [f.lookup])[0]
            let levels = crashed.frames.filter { $0.index == i }
            #expect(levels.map { Level(function: $0.function ?? $0.symbol, file: $0.file, line: $0.line ?? 0) } == oracle, "frame \(i)")
            #expect(!levels.contains { $0.function?.hasPrefix("device_name") == true }, "frame \(i): the debug file wins")
            #expect(levels.allSatisfy { $0.status == .symbolicated })
        }
        // `parse` shows what the device said.
        let parsed = try h.stackline(["parse", path])
        #expect(parsed.stdout.contains("device_name_0 + 8"), "\(parsed.stdout.prefix(400))")
        #expect(report.app?.name == "com.example.fixture")
        #expect(report.os == "google/sdk_gphone64_x86_64/emu64xa:14/UE1A.230829.050/12077443:userdebug/dev-keys")
    }
}
