import Foundation
import TestSupport
import Testing

/// The remote worker's command line and the systemd units we ship, checked by the tools that read them.
@Suite struct WorkerDeploymentTests {
    static let unit = TestPaths.packageRoot + "/Workers/systemd/stackline-worker.service"

    /// systemd's own verifier reads the unit we ship, pointed at the worker just built.
    @Test func theSystemdUnitVerifies() throws {
        let dir = try TempDirectory("unit")
        defer { dir.remove() }
        let text = try String(contentsOfFile: Self.unit, encoding: .utf8)
        #expect(text.contains("/usr/local/bin/stackline-worker --connect"))
        let path = dir.file("stackline-worker.service")
        try text.replacingOccurrences(of: "/usr/local/bin/stackline-worker", with: TestPaths.worker)
            .replacingOccurrences(of: "EnvironmentFile=/etc/stackline/worker.env", with: "EnvironmentFile=-/etc/stackline/worker.env")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let out = try runProcess("/usr/bin/systemd-analyze", ["verify", path])
        #expect(out.status == 0, "systemd-analyze verify: \(out.stderr)\(out.stdout)")
        #expect(!out.stderr.contains("Unknown key") && !out.stderr.contains("Invalid"), "\(out.stderr)")

        // Every option the unit passes is one the worker accepts.
        let help = try runProcess(TestPaths.worker, ["--help"]).stdout
        let execStart = text.split(separator: "\n").drop { !$0.hasPrefix("ExecStart=") }.prefix { !$0.isEmpty && !$0.hasPrefix("#") }
            .joined(separator: " ")
        let options = execStart.split(separator: " ").filter { $0.hasPrefix("--") }
        #expect(options.count >= 5, "\(execStart)")
        for option in options { #expect(help.contains(option), "the unit passes \(option), which --help does not list") }
    }

    /// The serve unit we ship: systemd's verifier reads it, pointed at the binary just built,
    /// it makes what serve creates private (UMask=0077, issue 28 F7), and every option it passes
    /// is one `stackline serve --help` lists.
    @Test func theServeUnitVerifiesAndKeepsFilesPrivate() throws {
        let dir = try TempDirectory("unit")
        defer { dir.remove() }
        let text = try String(contentsOfFile: TestPaths.packageRoot + "/deploy/systemd/stackline-serve.service", encoding: .utf8)
        #expect(text.contains("\nUMask=0077\n") && text.contains("\nStateDirectoryMode=0700\n"))
        let path = dir.file("stackline-serve.service")
        try text.replacingOccurrences(of: "/usr/local/bin/stackline", with: TestPaths.stackline).write(toFile: path, atomically: true, encoding: .utf8)
        let out = try runProcess("/usr/bin/systemd-analyze", ["verify", path])
        #expect(out.status == 0, "systemd-analyze verify: \(out.stderr)\(out.stdout)")
        #expect(!out.stderr.contains("Unknown key") && !out.stderr.contains("Invalid"), "\(out.stderr)")
        let help = try runProcess(TestPaths.stackline, ["serve", "--help"]).stdout
        let execStart = text.split(separator: "\n").drop { !$0.hasPrefix("ExecStart=") }.prefix { !$0.isEmpty && !$0.hasPrefix("#") }
            .joined(separator: " ")
        let options = execStart.split(separator: " ").filter { $0.hasPrefix("--") }
        #expect(options.count >= 3, "\(execStart)")
        for option in options { #expect(help.contains(option), "the unit passes \(option), which serve --help does not list") }
    }

    @Test func badWorkerOptionsAreRefusedWithTheirReason() throws {
        let size = try runProcess(TestPaths.worker, ["--connect", "http://127.0.0.1:9", "--cache-size", "12Q"])
        #expect(size.status == 64)
        #expect(size.stderr.contains("--cache-size 12Q is not a size"), "\(size.stderr)")
        let token = try runProcess(TestPaths.worker, ["--token", "sl_1_x"])
        #expect(token.status == 64)
        #expect(token.stderr.contains("--token and --name need --connect"), "\(token.stderr)")
        let noToken = try runProcess(
            TestPaths.worker, ["--connect", "http://127.0.0.1:9"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(noToken.status == 2)
        #expect(noToken.stderr.contains("--connect needs a token"), "\(noToken.stderr)")
        let url = try runProcess(TestPaths.worker, ["--connect", "ftp://host", "--token", "sl_1_x"])
        #expect(url.status == 2)
        #expect(url.stderr.contains("is not an http:// or https:// URL"), "\(url.stderr)")
    }
}
