import Foundation
import TestSupport
import Testing

/// `stackline db backup` and `db check` (issue 33 §3, docs/backup.md): backups taken while a
/// real `serve` stores and processes reports are each a whole database as of one commit, and
/// the last one answers as the live database does.
@Suite(.serialized) struct DatabaseBackupTests {
    /// The ledger recomputed by sqlite3 from the members, and what the ledger stores: the oracle
    /// `db check` must agree with, read with another program than Stackline.
    static func ledger(_ path: String) throws -> (stored: String, members: String) {
        func query(_ sql: String) throws -> String {
            let out = try runProcess("sqlite3", ["-readonly", path, sql])
            guard out.status == 0 else { throw TestSupportError("sqlite3: \(out.stderr)") }
            return out.stdout
        }
        return (
            try query("SELECT fingerprint, count FROM groups ORDER BY fingerprint"),
            try query("SELECT fingerprint, COUNT(*) FROM results WHERE fingerprint IS NOT NULL GROUP BY fingerprint ORDER BY fingerprint"))
    }

    @Test func backupsTakenUnderLoadAreWholeAndTheLastAnswersAsTheLiveDatabase() throws {
        let h = try Harness()
        #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, try CrashFixture.shared.binary()]).status == 0)
        // 240 distinct reports (identical bytes would be one report): two crash sites, three versions.
        var folders: [String] = []
        for (n, version) in ["1.0", "1.1", "1.2"].enumerated() {
            var reports: [Data] = []
            for i in 0..<80 {
                let base = try CrashFixture.shared.report(mode: i % 2 == 0 ? "index" : "segv")
                reports.append(base + Data(repeating: 0x20, count: 1 + i + 80 * n))
            }
            let paths = try h.write(reports, subdir: "in-\(version)")
            folders.append(((paths.first ?? "") as NSString).deletingLastPathComponent)
        }
        let server = try h.startServer(["--workers", "2"])
        defer { _ = server }

        // Submit while backing up: each backup is taken between commits of intake and of the workers.
        let script = zip(folders, ["1.0", "1.1", "1.2"]).map { "\"$0\" submit --version \($1) '\($0)' >/dev/null || exit 1" }.joined(separator: "\n")
        let submitter = Process()
        submitter.executableURL = URL(fileURLWithPath: "/bin/sh")
        submitter.arguments = ["-c", script, TestPaths.stackline]
        submitter.environment = ProcessInfo.processInfo.environment.merging(h.environment) { $1 }
        try submitter.run()
        // Backups go on until one has caught the service mid-work (reports stored whose results
        // are not in yet) and the submissions are done.
        var backups: [String] = []
        var midWork = false
        while backups.count < 40 && (submitter.isRunning || !midWork) {
            let path = h.dir.file("backup-\(backups.count).sqlite")
            let out = try h.stackline(["db", "backup", path, "--json"])
            #expect(out.status == 0, "\(out.stderr)")
            backups.append(path)
            if let counts = try? JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Int],
                let reports = counts["reports"], let results = counts["results"], reports > results
            {
                midWork = true
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        submitter.waitUntilExit()
        #expect(submitter.terminationStatus == 0)
        #expect(midWork, "no backup was taken while reports waited for their results")

        // Each backup is a consistent database: SQLite's checks pass and every group's count is
        // its members' (sqlite3 says so, and so does `db check`).
        for path in backups {
            let (stored, members) = try Self.ledger(path)
            #expect(stored == members, "\(path)")
            let check = try h.stackline(["db", "check", "--db", path, "--json"])
            #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        }

        // Once every report is processed, a backup answers as the live database does.
        let live = try h.database()
        try h.waitUntil("every report processed") { try live.unfinishedCount() == 0 && live.stateCounts()[.done] == 240 }
        let last = h.dir.file("backup-final.sqlite")
        #expect(try h.stackline(["db", "backup", last]).status == 0)
        for command in [["groups", "--json"], ["groups", "--json", "--version", "1.1"], ["releases", "--json"]] {
            let fromLive = try h.stackline(command)
            let fromCopy = try h.stackline(command + ["--db", last])
            #expect(fromLive.status == 0 && fromLive.stdout == fromCopy.stdout, "\(command): \(fromLive.stdout) vs \(fromCopy.stdout)")
        }
        let (stored, members) = try Self.ledger(last)
        #expect(stored == members)
        #expect(stored.split(separator: "\n").compactMap { Int($0.split(separator: "|").last ?? "") }.reduce(0, +) == 240, "\(stored)")

        // A backup is never written over a file, and a ledger that lies is named.
        let again = try h.stackline(["db", "backup", last])
        #expect(again.status != 0 && again.stderr.contains("never over one"), "\(again.stderr)")
        let damaged = h.dir.file("damaged.sqlite")
        try FileManager.default.copyItem(atPath: last, toPath: damaged)
        let fingerprint = try #require(stored.split(separator: "\n").first?.split(separator: "|").first.map(String.init))
        #expect(try runProcess("sqlite3", [damaged, "UPDATE groups SET count = count + 1 WHERE fingerprint = '\(fingerprint)'"]).status == 0)
        let check = try h.stackline(["db", "check", "--db", damaged])
        #expect(check.status == 1, "\(check.stdout)")
        #expect(check.stdout.contains("group \(fingerprint): count"), "\(check.stdout)")
    }
}
