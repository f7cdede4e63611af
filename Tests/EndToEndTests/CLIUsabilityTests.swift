import Foundation
import TestSupport
import Testing

/// What a new user meets, through the real `stackline` binary (issue 11, part B): version,
/// read-only commands that create nothing, `submit --wait` without a master, one JSON style,
/// `symbols add` on a build folder, store size, id prefixes, messages, help and man page.
@Suite struct CLIUsabilityTests {
    static let rfc3339 = #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"#
    static let timestampKeys: Set<String> = ["firstSeen", "lastSeen", "addedAt", "receivedBefore", "updatedAt", "retryAt"]

    /// Parses `out.stdout` with JSONSerialization (a parser that is not ours) and checks every
    /// timestamp in it is RFC 3339 UTC; returns the document and how many timestamps it held.
    @discardableResult
    func json(_ out: ProcessOutput, sourceLocation: SourceLocation = #_sourceLocation) throws -> (Any, Int) {
        #expect(out.status == 0, "\(out.summary)", sourceLocation: sourceLocation)
        let document = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8))
        var count = 0
        func walk(_ value: Any) {
            if let object = value as? [String: Any] {
                for (key, inner) in object {
                    if Self.timestampKeys.contains(key) {
                        count += 1
                        let text = inner as? String ?? "\(inner)"
                        #expect(text.range(of: Self.rfc3339, options: .regularExpression) != nil,
                                "\(key): \(text) is not RFC 3339 UTC in `\(out.command.dropFirst().joined(separator: " "))`",
                                sourceLocation: sourceLocation)
                    }
                    walk(inner)
                }
            } else if let array = value as? [Any] {
                array.forEach(walk)
            }
        }
        walk(document)
        return (document, count)
    }

    /// Compiles `source` with `gcc -g` (and a fixed build id when given) into `path`.
    func gcc(_ path: String, shared: Bool = false, buildID: String? = nil, in dir: TempDirectory) throws {
        let source = dir.file("src-\((path as NSString).lastPathComponent).c")
        try "int twice(int x) { return x * 2; }\nint main(void) { return twice(3); }\n"
            .write(toFile: source, atomically: true, encoding: .utf8)
        var args = ["-g", "-O0", "-Wl,--build-id" + (buildID.map { "=0x" + $0 } ?? ""), source, "-o", path]
        if shared { args = ["-shared", "-fPIC"] + args }
        let built = try runProcess("gcc", args)
        try #require(built.succeeded, "\(built.summary)")
    }

    // MARK: Item 1: version

    @Test func versionPrintsTheReleaseAndARevisionOfThisRepository() throws {
        let out = try runStackline(["--version"])
        #expect(out.status == 0, "\(out.summary)")
        let line = out.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let match = try #require(line.wholeMatch(of: /(\d+\.\d+\.\d+) \(([0-9a-f]{7,40}|unknown)\)/), "\(line)")
        let revision = String(match.output.2)
        // git itself says the revision is a commit of this repository.
        let git = try runProcess("git", ["-C", TestPaths.packageRoot, "cat-file", "-t", revision])
        #expect(git.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "commit", "\(revision): \(git.summary)")
    }

    // MARK: Item 2: read-only commands create no database

    @Test func readOnlyCommandsRefuseAMissingDatabaseAndCreateNothing() throws {
        let dir = try TempDirectory("readonly")
        defer { dir.remove() }
        let db = dir.file("typo/stackline.sqlite")
        let commands: [[String]] = [
            ["status"], ["status", "1"], ["status", "--json"], ["report", "1"], ["report", "1", "--json"],
            ["groups"], ["groups", "--json"], ["group", "abcd"], ["prune", "--older-than", "30d"],
            ["symbols", "missing", "--symbols", dir.file("symbols")],
        ]
        for command in commands {
            let out = try runProcess(TestPaths.stackline, command + ["--db", db], timeout: 30)
            #expect(out.status == 1, "\(command): \(out.summary)")
            #expect(out.stderr.contains("no database at \(db) (run `stackline submit` first, or pass --db)"), "\(command): \(out.stderr)")
            #expect(out.stdout.isEmpty, "\(command): \(out.stdout)")
        }
        // The default path, with STACKLINE_DB empty (= unset), from a fresh working directory.
        for command in [["status"], ["groups"], ["report", "1"]] {
            let out = try runProcess(
                TestPaths.stackline, command, environment: ["STACKLINE_DB": ""], currentDirectory: dir.path, timeout: 30)
            #expect(out.status == 1, "\(command): \(out.summary)")
            #expect(out.stderr.contains("no database at data/stackline.sqlite"), "\(out.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: db))
        #expect(!FileManager.default.fileExists(atPath: dir.file("typo")), "not even the folder")
        #expect(!FileManager.default.fileExists(atPath: dir.file("data")), "nothing under the working directory")

        // submit does create it.
        let submitted = try runProcess(
            TestPaths.stackline, ["submit", "--accept-unparsed", "--db", db, "-"], stdin: Data("x\n".utf8), timeout: 30)
        #expect(submitted.status == 0, "\(submitted.summary)")
        #expect(FileManager.default.fileExists(atPath: db))
    }

    // MARK: Items 3, 4, 8, 9: submit, report, groups, group, status, prune

    @Test func submitWaitWithoutAMasterHintsAndTimesOut() throws {
        let h = try Harness()
        let paths = try h.write([variant(of: try CrashFixture.shared.report(), number: 1), variant(of: try CrashFixture.shared.report(), number: 2)])
        let out = try h.stackline(["submit", "--wait", "--timeout", "6", "--json"] + paths)
        #expect(out.status == 1, "\(out.summary)")
        #expect(out.stderr.contains("waiting for a master: run `stackline master`"), "\(out.stderr)")
        #expect(out.stderr.contains("gave up after 6"), "\(out.stderr)")
        // Still one JSON document: both inputs, queued.
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]], "\(out.stdout)")
        #expect(entries.map { $0["input"] as? String } == paths)
        #expect(entries.allSatisfy { $0["state"] as? String == "queued" && $0["reportId"] is Int }, "\(entries)")

        let id = try #require(entries.first?["reportId"] as? Int)
        let report = try h.stackline(["report", "\(id)"])
        #expect(report.status == 1)
        #expect(report.stderr.contains("report \(id) is queued (no master has processed it yet: run `stackline master`)"), "\(report.stderr)")
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state = 'queued'") == 2, "the reports stay queued")
    }

    @Test func everyDataCommandPrintsOneJSONDocumentInOneStyle() throws {
        let h = try Harness()
        let demo = try CrashFixture.shared.binary()
        let demoID = try #require(try readelfBuildID(demo))
        let raw = [variant(of: try CrashFixture.shared.report(), number: 1), variant(of: try CrashFixture.shared.report(), number: 2)]
        let paths = try h.write(raw)

        // submit --json (no wait): one array, one entry per input, the ids SQL sees.
        let (submitted, _) = try json(try h.stackline(["submit", "--json", "--version", "2.1", paths[0]]))
        let first = try #require((submitted as? [[String: Any]])?.first?["reportId"] as? Int)
        #expect(try sqlite(h.dbPath, "SELECT version FROM reports WHERE id = \(first)").first?["version"] as? String == "2.1")

        // submit --wait --json with a master: one array whose entries carry their reports.
        let master = try h.startMaster(["--workers", "1"])
        defer { master.signal(SIGTERM); _ = try? master.waitForExit() }
        let (waited, _) = try json(try h.stackline(["submit", "--wait", "--json", "--version", "2.1", paths[1]]))
        let entry = try #require((waited as? [[String: Any]])?.first)
        #expect(entry["state"] as? String == "done", "\(entry)")
        let second = try #require(entry["reportId"] as? Int)
        let embedded = try #require(entry["report"] as? [String: Any])
        #expect(embedded["id"] as? Int == second)
        try h.waitUntil("the first report done") { try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM results") == 2 }

        // report --json includes the group SQL says it is in.
        let (report, reportTimes) = try json(try h.stackline(["report", "\(second)", "--json"]))
        let fingerprint = try #require(try sqlite(h.dbPath, "SELECT fingerprint FROM results WHERE report_id = \(second)").first?["fingerprint"] as? String)
        let group = try #require((report as? [String: Any])?["group"] as? [String: Any], "report --json has no group")
        #expect(group["fingerprint"] as? String == fingerprint)
        #expect(reportTimes == 2, "the group's firstSeen and lastSeen")

        let (groups, groupTimes) = try json(try h.stackline(["groups", "--json"]))
        let listed = try #require((groups as? [[String: Any]])?.first)
        #expect(listed["fingerprint"] as? String == fingerprint)
        #expect((listed["versions"] as? [String: Int]) == ["2.1": 2], "--version fills what the report lacks: \(listed)")
        #expect(groupTimes == 2)
        try json(try h.stackline(["group", String(fingerprint.prefix(8)), "--json"]))
        let (status, _) = try json(try h.stackline(["status", "--json"]))
        #expect((status as? [String: Int])?["done"] == 2, "\(status)")
        let (job, jobTimes) = try json(try h.stackline(["status", "\(second)", "--json"]))
        #expect((job as? [String: Any])?["reportId"] as? Int == second)
        #expect(jobTimes == 1)

        // The store: add, list, show (by prefix), missing, lookup.
        let (added, _) = try json(try h.stackline(["symbols", "add", "--json", "--symbols", h.symbolsPath, demo]))
        let summary = try #require((added as? [String: Any])?["summary"] as? [String: Int])
        #expect(summary == ["stored": 1, "alreadyPresent": 0, "skipped": 0, "refused": 0], "\(summary)")
        #expect(((added as? [String: Any])?["requeuedReportIds"] as? [Int])?.sorted() == [first, second], "both reports lacked the demo")
        let (list, listTimes) = try json(try h.stackline(["symbols", "list", "--json", "--symbols", h.symbolsPath]))
        #expect((list as? [[String: Any]])?.compactMap { $0["buildId"] as? String } == [demoID])
        #expect(listTimes == 1)
        let (shown, _) = try json(try h.stackline(["symbols", "show", "--json", "--symbols", h.symbolsPath, String(demoID.prefix(6))]))
        #expect((shown as? [String: Any])?["buildId"] as? String == demoID)
        try json(try h.stackline(["symbols", "missing", "--json", "--symbols", h.symbolsPath]))
        let (looked, _) = try json(try h.stackline(["lookup", "--json", "--symbols", h.symbolsPath, "--build-id", String(demoID.prefix(8)), "0x1000"]))
        #expect((looked as? [Any])?.count == 1)
        try json(try h.stackline(["parse", "--json", paths[0]]))
        let (counts, _) = try json(try h.stackline(["parse", "--summary", "--json", paths[0]]))
        #expect((counts as? [String: Any])?["format"] as? String == "swift-backtrace-json", "\(counts)")

        master.signal(SIGTERM)
        _ = try master.waitForExit()
        let (pruned, pruneTimes) = try json(try h.stackline(["prune", "--older-than", "30d", "--json"]))
        #expect((pruned as? [String: Any])?["reportsDeleted"] as? Int == 0)
        #expect(pruneTimes == 1)
        let (removed, _) = try json(try h.stackline(["symbols", "rm", "--json", "--symbols", h.symbolsPath, String(demoID.prefix(6))]))
        #expect((removed as? [String: Any])?["buildId"] as? String == demoID)
    }

    @Test func messagesAndTablesSayWhatTheyMean() throws {
        let h = try Harness()
        let raw = variant(of: try CrashFixture.shared.report(), number: 7)
        let path = try h.write([raw])[0]
        let id = try #require(try h.submit([path]).first)
        let refused = try #require(Int64(try h.stackline(["submit", "--accept-unparsed", "--app", "MyDaemon", "--version", "3", "-"], stdin: Data("junk\n".utf8))
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(try sqlite(h.dbPath, "SELECT app, version FROM reports WHERE id = \(refused)").first.map { "\($0["app"] ?? "")/\($0["version"] ?? "")" } == "MyDaemon/3")
        let master = try h.startMaster(["--workers", "1", "--once"])
        #expect(try master.waitForExit() == 0)

        let failed = try h.stackline(["report", "\(refused)"])
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("report \(refused) failed: input error"), "\(failed.stderr)")
        #expect(!failed.stderr.contains("is failed"))

        // No debug file in the store: the missing image is named with its path, as the input gave them.
        let input = try #require(try JSONSerialization.jsonObject(with: raw) as? [String: Any])
        let images = try #require(input["images"] as? [[String: Any]])
        let demo = try #require(images.first { ($0["path"] as? String)?.hasSuffix("/Demo") == true }, "\(images)")
        let demoID = try #require(demo["buildId"] as? String)
        let text = try h.stackline(["report", "\(id)"])
        #expect(text.status == 0, "\(text.summary)")
        #expect(text.stdout.contains("  \(demoID)  \(demo["name"] as? String ?? "Demo")  \(demo["path"] as? String ?? "")"), "\(text.stdout.prefix(1500))")
        // Unresolved frames show image + offset: the offset is the address minus the image's base.
        let lines = text.stdout.split(separator: "\n").filter { $0.hasSuffix("<missingDebugFile>") }
        #expect(!lines.isEmpty)
        let base = try #require(UInt64((demo["baseAddress"] as? String ?? "").dropFirst(2), radix: 16), "\(demo)")
        for line in lines where line.contains(" Demo + 0x") {
            let parts = line.split(separator: " ").map(String.init)
            let address = try #require(parts.first { $0.hasPrefix("0x") }.flatMap { UInt64($0.dropFirst(2), radix: 16) })
            let offset = try #require(parts.last { $0.hasPrefix("0x") }.flatMap { UInt64($0.dropFirst(2), radix: 16) })
            #expect(address - base == offset, "\(line)")
        }
        #expect(lines.contains { $0.contains(" Demo + 0x") }, "\(lines)")
        let apple = try h.stackline(["report", "\(id)", "--format", "apple"])
        #expect(!apple.stdout.contains("symbolicated by Stackline (unsymbolicated)"))
        #expect(apple.stdout.contains("Report Format:"))

        let groups = try h.stackline(["groups"])
        let header = try #require(groups.stdout.split(separator: "\n").first)
        #expect(header.contains("APP"), "\(groups.stdout)")
        let row = try #require(groups.stdout.split(separator: "\n").dropFirst().first)
        #expect(row.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first == "Demo", "the APP column: \(row)")
        let fingerprint = try #require(try sqlite(h.dbPath, "SELECT fingerprint FROM results WHERE report_id = \(id)").first?["fingerprint"] as? String)
        let group = try h.stackline(["group", fingerprint])
        #expect(group.stdout.contains("Latest report ids: \(id)"), "\(group.stdout.prefix(800))")

        let help = try h.stackline(["master", "--help"])
        #expect(help.stdout.contains("(default: the number of cores)"))
        #expect(!help.stdout.contains("cores). (default:"), "\(help.stdout)")
        for (command, values) in [
            (["report", "--help"], "values: text, json, apple"), (["groups", "--help"], "values: crash, lag"),
            (["lookup", "--help"], "values: full, simplified"), (["master", "--help"], "values: trace, debug, info"),
        ] {
            let out = try h.stackline(command)
            #expect(out.stdout.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: #" +"#, with: " ", options: .regularExpression).contains(values), "\(command)")
        }
    }

    // MARK: Items 5–7: the store

    @Test func symbolsAddOnABuildFolderSkipsOtherFilesAndSumsUp() throws {
        let dir = try TempDirectory("buildfolder")
        defer { dir.remove() }
        let build = dir.file("build")
        try FileManager.default.createDirectory(atPath: build + "/lib", withIntermediateDirectories: true)
        try gcc(build + "/app", in: dir)
        try gcc(build + "/lib/libtwice.so", shared: true, in: dir)
        try "notes\n".write(toFile: build + "/README.txt", atomically: true, encoding: .utf8)
        try Data([0xe2, 0x9c, 0x93, 0x53, 0x44, 0x4f, 0x43, 0x00, 0x01, 0x02]).write(to: URL(fileURLWithPath: build + "/lib/Twice.swiftdoc"))
        let tar = try runProcess("tar", ["czf", build + "/sources.tar.gz", "-C", dir.path, "src-app.c"])
        try #require(tar.succeeded, "\(tar.summary)")
        let ids = try [build + "/app", build + "/lib/libtwice.so"].map { try #require(try readelfBuildID($0)) }
        let store = dir.file("store")

        let out = try runProcess(TestPaths.stackline, ["symbols", "add", "--symbols", store, build], timeout: 60)
        #expect(out.status == 0, "\(out.summary)")
        #expect(out.stderr.isEmpty, "skipped quietly: \(out.stderr)")
        #expect(out.stdout.hasSuffix("stored 2, already present 0, skipped 3 (not debug files), refused 0\n"), "\(out.stdout)")
        let again = try runProcess(TestPaths.stackline, ["symbols", "add", "--symbols", store, build], timeout: 60)
        #expect(again.stdout.hasSuffix("stored 0, already present 2, skipped 3 (not debug files), refused 0\n"), "\(again.stdout)")

        // A damaged ELF in the folder is refused loudly; the rest goes on.
        let whole = try #require(FileManager.default.contents(atPath: build + "/app"))
        try whole.prefix(whole.count / 3).write(to: URL(fileURLWithPath: build + "/broken"))
        let damaged = try runProcess(TestPaths.stackline, ["symbols", "add", "--symbols", store, build], timeout: 60)
        #expect(damaged.status == 1)
        #expect(damaged.stdout.hasSuffix("stored 0, already present 2, skipped 3 (not debug files), refused 1\n"), "\(damaged.stdout)")
        #expect(damaged.stderr.contains("build/broken"), "\(damaged.stderr)")

        // Named on the command line, a file that is not a debug file is an error, by name.
        let tarball = try runProcess(TestPaths.stackline, ["symbols", "add", "--symbols", store, build + "/sources.tar.gz"], timeout: 30)
        #expect(tarball.status == 1)
        #expect(tarball.stderr.contains("sources.tar.gz: a gzip file (.tar.gz, .gz) is not unpacked"), "\(tarball.stderr)")
        #expect(!tarball.stderr.contains("not an ELF file"))
        let text = try runProcess(TestPaths.stackline, ["symbols", "add", "--symbols", store, build + "/README.txt"], timeout: 30)
        #expect(text.status == 1)
        #expect(text.stderr.contains("README.txt: not a debug file"), "\(text.stderr)")

        // One copy per unstripped file: the executable and .debug roles are one inode (stat says).
        for id in ids {
            let base = "\(store)/.build-id/\(id.prefix(2))/\(id.dropFirst(2))"
            let stat = try runProcess("stat", ["-c", "%i %h", base, base + ".debug"])
            let rows = stat.stdout.split(separator: "\n")
            #expect(rows.count == 2 && rows[0] == rows[1] && rows[0].hasSuffix(" 2"), "\(id): \(stat.stdout)")
        }
        // The stored bytes, each inode once (find's view), are exactly the two inputs (beside
        // them: sidecars, locks and symcaches, the lookup indexes built from them).
        let stored = try runChecked("find", [
            store, "-type", "f", "!", "-name", "*.json", "!", "-name", "*.lock", "!", "-name", "*.symcache", "-printf", "%i %s\n",
        ]).stdout
        let perInode = Dictionary(stored.split(separator: "\n").map { ($0.split(separator: " ")[0], Int($0.split(separator: " ")[1]) ?? 0) }) { a, _ in a }
        let inputs = try [build + "/app", build + "/lib/libtwice.so"].map { try FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int ?? 0 }
        #expect(perInode.values.reduce(0, +) == inputs.reduce(0, +), "\(stored) for inputs of \(inputs)")

        // rm by prefix leaves nothing of the entry, .lock included.
        let rm = try runProcess(TestPaths.stackline, ["symbols", "rm", "--symbols", store, String(ids[0].prefix(7))], timeout: 30)
        #expect(rm.status == 0, "\(rm.summary)")
        let left = try runChecked("find", [store + "/.build-id/" + ids[0].prefix(2), "-name", String(ids[0].dropFirst(2)) + "*"]).stdout
        #expect(left.isEmpty, "left behind: \(left)")
    }

    @Test func buildIdPrefixesResolveWhenUniqueAndAreRefusedWhenAmbiguous() throws {
        let dir = try TempDirectory("prefix")
        defer { dir.remove() }
        let (a, b) = ("deadbeef01" + String(repeating: "0", count: 30), "deadbeef02" + String(repeating: "0", count: 30))
        try gcc(dir.file("a"), buildID: a, in: dir)
        try gcc(dir.file("b"), buildID: b, in: dir)
        #expect(try readelfBuildID(dir.file("a")) == a)
        let store = dir.file("store")
        try runChecked(TestPaths.stackline, ["symbols", "add", "--symbols", store, dir.file("a"), dir.file("b")])

        let ambiguous = try runProcess(TestPaths.stackline, ["symbols", "show", "--symbols", store, "DEADBEEF"], timeout: 30)
        #expect(ambiguous.status == 1)
        #expect(ambiguous.stderr.contains("build-id prefix DEADBEEF matches 2 stored files: \(a), \(b)"), "\(ambiguous.stderr)")
        for command in [["symbols", "show", "deadbeef"], ["lookup", "--build-id", "deadbeef", "0x1000"], ["symbols", "rm", "deadbeef"]] {
            let out = try runProcess(TestPaths.stackline, command + ["--symbols", store], timeout: 30)
            #expect(out.status == 1 && out.stderr.contains("matches 2 stored files"), "\(command): \(out.summary)")
        }
        let shown = try runProcess(TestPaths.stackline, ["symbols", "show", "--symbols", store, "deadbeef02"], timeout: 30)
        #expect(shown.status == 0 && shown.stdout.contains("build-id\t\(b)"), "\(shown.summary)")
        let removed = try runProcess(TestPaths.stackline, ["symbols", "rm", "--symbols", store, "dead-beef-01"], timeout: 30)
        #expect(removed.status == 0 && removed.stdout.contains(a), "\(removed.summary)")
        let unknown = try runProcess(TestPaths.stackline, ["symbols", "show", "--symbols", store, "abcd"], timeout: 30)
        #expect(unknown.status == 1 && unknown.stderr.contains("no debug file for build-id abcd"), "\(unknown.summary)")
    }

    // MARK: Item 10: man page and completions

    @Test func manPageRendersAndCompletionScriptsParse() throws {
        let dir = try TempDirectory("man")
        defer { dir.remove() }
        // The tool `make man` (argument-parser's generate-manual plugin) builds and runs.
        let tool = TestPaths.buildDirectory + "/generate-manual-tool"
        try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) missing: run `make man` (make test does)")
        try runChecked(tool, [TestPaths.stackline, "--output-directory", dir.path])
        let page = dir.file("stackline.1")
        let source = try String(contentsOfFile: page, encoding: .utf8)
        #expect(source.contains(".Dt STACKLINE 1"))
        let rendered = try runProcess("groff", ["-mandoc", "-Tutf8", "-P-c", "-P-b", "-P-u", page])
        #expect(rendered.succeeded, "\(rendered.summary)")
        for text in ["NAME", "stackline", "submit", "--timeout", "symbols", "--version"] {
            #expect(rendered.stdout.contains(text), "\(text) not in the rendered page")
        }

        let bash = try runStackline(["--generate-completion-script", "bash"])
        #expect(bash.status == 0 && bash.stdout.contains("symbols") && bash.stdout.contains("--format"))
        let script = dir.file("stackline.bash")
        try bash.stdout.write(toFile: script, atomically: true, encoding: .utf8)
        let syntax = try runProcess("bash", ["-n", script])
        #expect(syntax.succeeded, "bash -n: \(syntax.summary)")
        for shell in ["zsh", "fish"] {
            #expect(try runStackline(["--generate-completion-script", shell]).status == 0, "\(shell)")
        }
    }
}
