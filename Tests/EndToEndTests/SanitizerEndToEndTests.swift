import Foundation
import ReportModel
import TestSupport
import Testing

/// An AddressSanitizer report made here, end to end: a C heap use-after-free built with clang's
/// ASan and a build-id, run with `symbolize=0` so the report carries raw `module+offset` frames;
/// the binary goes into the store with `stackline symbols add`, the report through
/// `stackline submit --wait`, and every frame in the binary must say what llvm-symbolizer says
/// for the same binary and offset.
@Suite(.serialized) struct SanitizerEndToEndTests {
    @Test func anASanReportSymbolicatesLikeLLVMSymbolizer() throws {
        let h = try Harness()
        let clang = try findTool("/opt/swift/usr/bin/clang")
        let binary = h.dir.file("use-after-free")
        try runChecked(clang, [
            "-fsanitize=address", "-g", "-O0", "-fuse-ld=lld", "-Wl,--build-id",
            TestPaths.packageRoot + "/Tests/Fixtures/c/use-after-free.c", "-o", binary,
        ])
        let run = try runProcess(binary, [], environment: ["ASAN_OPTIONS": "symbolize=0"])
        #expect(!run.succeeded, "the program must die of the use-after-free")
        let text = run.stderr
        let reportPath = h.dir.file("asan.txt")
        try Data(text.utf8).write(to: URL(fileURLWithPath: reportPath))

        let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, binary])
        #expect(added.status == 0, "\(added.stderr)")
        let master = try h.startMaster(["--workers", "1"])
        defer { master.signal(SIGTERM); _ = try? master.waitForExit() }
        let submitted = try h.stackline(["submit", "--wait", "--timeout", "120", reportPath])
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let id = try #require(submitted.stdout.split(separator: "\n").compactMap { Int64($0.split(separator: "\t").first ?? "") }.first)
        let out = try h.stackline(["report", "\(id)", "--format", "json"])
        let report = try JSONDecoder().decode(SymbolicatedReport.self, from: Data(out.stdout.utf8))

        // The exception is the report's ERROR line.
        let error = try sanitizerErrorLine(text)
        #expect(report.format == "sanitizer")
        #expect(report.exception?.type == "heap-use-after-free" && error.type == "heap-use-after-free")
        #expect(report.exception?.message == error.message)
        #expect(report.exception?.faultAddress == Address(error.address))

        // Every frame in the binary, in every stack, resolves as llvm-symbolizer resolves the offset.
        let binaryName = (binary as NSString).lastPathComponent
        var checked = 0
        for thread in report.threads {
            for index in Set(thread.frames.map(\.index)).sorted() {
                let levels = thread.frames.filter { $0.index == index }
                guard let first = levels.first, first.image == binaryName else { continue }
                let oracle = try llvmSymbolizer(binary, [first.address.value])[0]
                let ours = levels.map { Level(function: $0.function ?? $0.symbol, file: $0.file, line: $0.line ?? 0) }
                #expect(ours == oracle, "thread \(thread.index) frame \(index) at \(first.address)")
                #expect(levels.allSatisfy { $0.status == .symbolicated || $0.status == .noLineInfo }, "\(levels.map(\.status))")
                checked += 1
            }
        }
        #expect(checked >= 6, "frames in the binary: \(checked)")
        let crashed = try #require(report.threads.first { $0.crashed })
        #expect(crashed.frames.first?.function == "read_freed")
        #expect(crashed.frames.first.flatMap(\.file).map { ($0 as NSString).lastPathComponent } == "use-after-free.c")

        // The group's title names the error (needs the grouping that puts messages in titles).
        let groups = try h.stackline(["groups", "--json"])
        let listed = try JSONSerialization.jsonObject(with: Data(groups.stdout.utf8)) as? [[String: Any]]
        let title = try #require(listed?.first?["title"] as? String)
        #expect(title.contains("heap-use-after-free"), "\(title)")
        #expect(title.contains(error.message), "the group title carries the message: \(title)")
    }
}
