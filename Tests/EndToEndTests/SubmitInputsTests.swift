import Foundation
import TestSupport
import Testing

/// `submit` reads only regular files: FIFOs, dangling links, links out of a directory and
/// unparseable files are each named on stderr while the batch goes on; the exit status is 1.
@Suite struct SubmitInputsTests {
    /// A KSCrash report that parses (its debug file need not exist), distinct per `n`.
    static func goodReport(_ n: Int) -> Data {
        let program = FixtureProgram(
            name: "app", path: "/Applications/app", buildID: "0123456789abcdef0123456789abcdef",
            preferredBase: 0, loadAddress: 0x1_0000_0000)
        let frame = PlannedFrame(program: program, fileAddress: 0x1000 + UInt64(n), kind: .pc)
        return Data(ReportBuilder.kscrash([program], [frame]).utf8)
    }

    /// `SELECT COUNT(*) FROM reports`, by the sqlite3 shell.
    static func storedReports(_ h: Harness) throws -> Int? {
        Int(try runChecked("/usr/bin/sqlite3", [h.dbPath, "SELECT COUNT(*) FROM reports"]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func badEntriesOfAFolderAreNamedAndTheGoodOnesStored() throws {
        let h = try Harness()
        let folder = h.dir.file("batch"), outside = h.dir.file("outside")
        for dir in [folder, folder + "/h-sub", outside + "/dir"] {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        }
        for (i, name) in ["a-good.json", "e-good.json", "g-good.json", "h-sub/i-good.json"].enumerated() {
            try Self.goodReport(i).write(to: URL(fileURLWithPath: folder + "/" + name))
        }
        try Self.goodReport(10).write(to: URL(fileURLWithPath: outside + "/elsewhere.json"))
        try Self.goodReport(11).write(to: URL(fileURLWithPath: outside + "/dir/deeper.json"))
        #expect(mkfifo(folder + "/b-fifo", 0o644) == 0)
        let fm = FileManager.default
        try fm.createSymbolicLink(atPath: folder + "/c-dangling", withDestinationPath: h.dir.file("missing"))
        try Data("hello, not a report\n".utf8).write(to: URL(fileURLWithPath: folder + "/d-unparseable.json"))
        try fm.createSymbolicLink(atPath: folder + "/f-outside.json", withDestinationPath: outside + "/elsewhere.json")
        try fm.createSymbolicLink(atPath: folder + "/j-dirlink", withDestinationPath: outside + "/dir")
        // (A chmod 000 file is not among them: the tests run as root, who reads it anyway.)

        // The timeout is the hang guard: a FIFO used to block submit forever.
        let out = try runProcess(TestPaths.stackline, ["submit", folder], environment: h.environment, timeout: 10)
        #expect(!out.signaled)
        #expect(out.status == 1, "\(out.summary)")
        #expect(try Self.storedReports(h) == 4)
        #expect(out.stdout.split(separator: "\n").count == 4)
        let errors = out.stderr.split(separator: "\n").map(String.init)
        #expect(errors.count == 5, "\(out.stderr)")
        for (name, why) in [
            ("b-fifo", "not a regular file (a FIFO)"), ("c-dangling", "symbolic link"),
            ("d-unparseable.json", "format not detected"), ("f-outside.json", "symbolic link"), ("j-dirlink", "symbolic link"),
        ] {
            #expect(errors.contains { $0.contains(folder + "/" + name + ": ") && $0.contains(why) }, "\(name): \(out.stderr)")
        }
    }

    @Test func namedLinksAreFollowedButAFIFOBehindOneIsRefused() throws {
        let h = try Harness()
        let fifo = h.dir.file("fifo"), toFifo = h.dir.file("to-fifo"), good = h.dir.file("good.json")
        let toGood = h.dir.file("to-good.json"), dangling = h.dir.file("dangling")
        #expect(mkfifo(fifo, 0o644) == 0)
        try Self.goodReport(1).write(to: URL(fileURLWithPath: good))
        try Self.goodReport(2).write(to: URL(fileURLWithPath: h.dir.file("other.json")))
        let fm = FileManager.default
        try fm.createSymbolicLink(atPath: toFifo, withDestinationPath: fifo)
        try fm.createSymbolicLink(atPath: toGood, withDestinationPath: h.dir.file("other.json"))
        try fm.createSymbolicLink(atPath: dangling, withDestinationPath: h.dir.file("missing"))

        let out = try runProcess(
            TestPaths.stackline, ["submit", toFifo, good, fifo, toGood, dangling, "/dev/null"], environment: h.environment,
            timeout: 10)
        #expect(!out.signaled)
        #expect(out.status == 1)
        #expect(try Self.storedReports(h) == 2, "a link the user names is followed, like cat does")
        let errors = out.stderr.split(separator: "\n").map(String.init)
        #expect(errors.count == 4, "\(out.stderr)")
        #expect(errors.contains { $0.contains("\(toFifo): not a regular file (a FIFO)") })
        #expect(errors.contains { $0.contains("\(fifo): not a regular file (a FIFO)") })
        #expect(errors.contains { $0.contains("\(dangling): a symbolic link to a missing file") })
        #expect(errors.contains { $0.contains("/dev/null: not a regular file (a character device)") })

        // parse reads inputs the same way.
        let parsed = try runProcess(TestPaths.stackline, ["parse", toFifo], timeout: 10)
        #expect(parsed.status == 1)
        #expect(parsed.stderr.contains("not a regular file (a FIFO)"))
    }
}
