import Foundation
import TestSupport
import Testing

/// `stackline symbols verify` on real builds: C programs compiled by gcc and split the way
/// distributions split them (objcopy, strip), the committed Mach-O fixtures in an
/// `.xcarchive` layout, zips made by python3 and a real `stackline serve`. Expected ids come
/// from readelf and llvm-dwarfdump, the JSON is read by python3, the proofs are checked
/// against addr2line: never against Stackline's own output.
@Suite(.serialized) struct SymbolsVerifyTests {
    /// A build folder of small C programs, each built with DWARF; its debug part kept with
    /// `objcopy --only-keep-debug` beside it, the shipped binary stripped of DWARF
    /// (`strip --strip-debug`, so its symbol table stays) and given a `.gnu_debuglink`.
    struct Build {
        let dir: String
        /// Program name → GNU build-id, read by readelf (nil: linked without one).
        var ids: [String: String?] = [:]

        func binary(_ name: String) -> String { dir + "/" + name }
        func debugFile(_ name: String) -> String { dir + "/" + name + ".debug" }

        static func source(_ name: String) -> String {
            """
            #include <stdio.h>
            __attribute__((noinline)) int \(name)_first(int v) { return v * 3 + 1; }
            __attribute__((noinline)) int \(name)_second(int v) { return \(name)_first(v) - 2; }
            __attribute__((noinline)) int \(name)_third(int v) { return \(name)_second(v) ^ 5; }
            int main(int argc, char **argv) { (void)argv; printf("%d\\n", \(name)_third(argc)); return 0; }
            """
        }

        /// `withoutBuildID`: programs linked with `--build-id=none`.
        init(in dir: String, programs: [String], withoutBuildID: Set<String> = []) throws {
            self.dir = dir
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            for name in programs {
                let binary = dir + "/" + name
                try Self.source(name).write(toFile: binary + ".c", atomically: true, encoding: .utf8)
                let link = withoutBuildID.contains(name) ? "-Wl,--build-id=none" : "-Wl,--build-id"
                try runChecked("gcc", ["-g", "-O0", link, "-o", binary, binary + ".c"])
                try runChecked("objcopy", ["--only-keep-debug", binary, binary + ".debug"])
                try runChecked("strip", ["--strip-debug", binary])
                try runChecked("objcopy", ["--add-gnu-debuglink=" + binary + ".debug", binary])
                ids[name] = try readelfBuildID(binary)
            }
        }
    }

    /// One row of the table: the cells after the image's path.
    struct Row: Equatable {
        var arch: String
        var id: String
        var status: String
        var fix: String
    }

    /// The table's rows by image path (columns are two or more spaces apart; a fix holds single spaces).
    static func rows(_ stdout: String) -> [String: Row] {
        var rows: [String: Row] = [:]
        for line in stdout.split(separator: "\n").dropFirst() {
            let cells = line.components(separatedBy: "  ").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard cells.count >= 4 else { break }  // the blank line after the table
            rows[cells[0]] = Row(arch: cells[1], id: cells[2], status: cells[3], fix: cells.count > 4 ? cells[4] : "")
        }
        return rows
    }

    /// "image arch" → "status id", read from the `--json` document by python3's json module.
    static func jsonStatuses(_ json: String) throws -> [String: String] {
        let script = """
            import json, sys
            d = json.load(sys.stdin)
            for i in d["images"]:
                print("\\t".join([i["image"] + " " + (i.get("arch") or "-"), i["status"] + " " + (i.get("id") or "-")]))
            """
        var out: [String: String] = [:]
        for line in try runChecked("python3", ["-c", script], stdin: json).stdout.split(separator: "\n") {
            let parts = line.split(separator: "\t").map(String.init)
            if parts.count == 2 { out[parts[0]] = parts[1] }
        }
        return out
    }

    /// Programs alpha and beta in `h`'s folder `build`, with their build-ids by readelf; alpha's
    /// debug file is added to `store` (by `symbols add`) when one is named.
    static func alphaAndBeta(_ h: Harness, store: String?) throws -> (build: Build, alpha: String, beta: String) {
        let build = try Build(in: h.dir.file("build"), programs: ["alpha", "beta"])
        guard let alpha = build.ids["alpha"] ?? nil, let beta = build.ids["beta"] ?? nil else {
            throw TestSupportError("readelf found no build-id in alpha or beta")
        }
        if let store {
            let added = try h.stackline(["symbols", "add", "--symbols", store, build.debugFile("alpha")])
            guard added.succeeded else { throw TestSupportError(added.summary) }
        }
        return (build, alpha, beta)
    }

    /// Runs a printed fix as a shell would, with this build's `stackline`.
    func runFix(_ fix: String, _ h: Harness) throws {
        let ran = try runProcess("sh", ["-c", fix.replacingOccurrences(of: "stackline symbols", with: TestPaths.stackline + " symbols")], environment: h.environment)
        #expect(ran.succeeded, "\(fix): \(ran.summary)")
    }

    func verify(_ h: Harness, _ arguments: [String], environment: [String: String] = [:]) throws -> ProcessOutput {
        try runProcess(
            TestPaths.stackline, ["symbols", "verify"] + arguments, environment: h.environment.merging(environment) { $1 }, timeout: 300)
    }

    @Test func aFolderWithOneDebugFileMissingFailsNamingItAndPassesOnceItIsAdded() throws {
        let h = try Harness()
        let (build, alphaID, betaID) = try Self.alphaAndBeta(h, store: h.symbolsPath)

        let first = try verify(h, ["--symbols", h.symbolsPath, build.dir])
        #expect(first.status == 1, "\(first.summary)\n\(first.stdout)")
        let rows = Self.rows(first.stdout)
        // The shipped binaries only: the .debug files and the sources beside them are no images.
        #expect(Set(rows.keys) == ["alpha", "beta"], "\(first.stdout)")
        #expect(rows["alpha"].map { [$0.status, $0.id] } == ["ok", alphaID], "\(first.stdout)")
        #expect(rows["beta"].map { [$0.status, $0.id] } == ["missing", betaID], "\(first.stdout)")
        // Why, where it looked, and the command that fixes it: the folder's own debug file.
        let betaStored = h.symbolsPath + "/.build-id/\(betaID.prefix(2))/\(betaID.dropFirst(2)).debug"
        #expect(first.stdout.contains("beta: missing: no debug file for \(betaID): looked for \(betaStored)"), "\(first.stdout)")
        let fix = try #require(rows["beta"]?.fix)
        #expect(fix == "stackline symbols add --symbols \(h.symbolsPath) \(build.debugFile("beta"))", "\(first.stdout)")

        // The printed command, run as it is (with this build's binary), fixes it.
        try runFix(fix, h)
        let second = try verify(h, ["--symbols", h.symbolsPath, build.dir])
        #expect(second.status == 0, "\(second.summary)\n\(second.stdout)")
        #expect(Self.rows(second.stdout).mapValues(\.status) == ["alpha": "ok", "beta": "ok"], "\(second.stdout)")
    }

    @Test func eachReasonAnImageFailsIsNamed() throws {
        let h = try Harness()
        let build = try Build(in: h.dir.file("build"), programs: ["gamma", "delta", "epsilon"], withoutBuildID: ["delta"])
        let gammaID = try #require(build.ids["gamma"] ?? nil)
        let epsilonID = try #require(build.ids["epsilon"] ?? nil)
        // The oracle: readelf finds no build-id note in delta.
        #expect(build.ids["delta"] == .some(nil))

        // gamma: its stripped binary (a symbol table, no DWARF) stored as its debug file.
        let stripped = h.dir.file("elsewhere/gamma")
        try FileManager.default.createDirectory(atPath: h.dir.file("elsewhere"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: build.binary("gamma"), toPath: stripped)
        let sections = try runChecked("readelf", ["-S", stripped]).stdout
        #expect(!sections.contains(".debug_info") && sections.contains(".symtab"))
        #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, stripped]).succeeded)
        // epsilon: a debug file whose line tables objcopy removed: DWARF that cannot say file:line.
        let lineless = h.dir.file("elsewhere/epsilon.debug")
        try runChecked("objcopy", ["--remove-section=.debug_line", build.debugFile("epsilon"), lineless])
        let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, lineless])
        #expect(added.succeeded, "\(added.summary)")
        // zeta: an ELF file cut short after 200 bytes (its header), shipped in the folder.
        let whole = try #require(FileManager.default.contents(atPath: build.binary("gamma")))
        try whole.prefix(200).write(to: URL(fileURLWithPath: build.binary("zeta")))

        let out = try verify(h, ["--symbols", h.symbolsPath, build.dir])
        #expect(out.status == 1, "\(out.summary)\n\(out.stdout)")
        let rows = Self.rows(out.stdout)
        #expect(rows["gamma"].map { [$0.status, $0.id] } == ["symbolTableOnly", gammaID], "\(out.stdout)")
        #expect(rows["delta"].map { [$0.status, $0.id] } == ["noIdentifier", "-"], "\(out.stdout)")
        #expect(rows["epsilon"].map { [$0.status, $0.id] } == ["answersWrong", epsilonID], "\(out.stdout)")
        #expect(rows["gamma"]?.fix == "stackline symbols add --symbols \(h.symbolsPath) \(build.debugFile("gamma"))")
        #expect(rows["delta"]?.fix == "relink with -Wl,--build-id")
        #expect(out.stdout.contains("gamma: symbolTableOnly: the debug file for \(gammaID) has no DWARF line tables"), "\(out.stdout)")
        #expect(out.stdout.contains("delta: noIdentifier: no GNU build-id note"), "\(out.stdout)")
        #expect(rows["zeta"].map { [$0.status, $0.id, $0.fix] } == ["unreadable", "-", ""], "\(out.stdout)")
        #expect(out.stdout.contains("zeta: unreadable: \(build.binary("zeta"))"), "\(out.stdout)")
        #expect(out.stdout.contains("epsilon: answersWrong: a lookup of epsilon_"), "\(out.stdout)")
        let epsilonFix = "stackline symbols rm --symbols \(h.symbolsPath) \(epsilonID) && stackline symbols add --symbols \(h.symbolsPath) \(build.debugFile("epsilon"))"
        #expect(rows["epsilon"]?.fix == epsilonFix, "\(out.stdout)")

        // The same statuses in the JSON document.
        let json = try verify(h, ["--symbols", h.symbolsPath, "--json", build.dir])
        #expect(json.status == 1)
        #expect(try Self.jsonStatuses(json.stdout) == [
            "gamma x86_64": "symbolTableOnly \(gammaID)", "delta x86_64": "noIdentifier -", "epsilon x86_64": "answersWrong \(epsilonID)",
            "zeta -": "unreadable -",
        ], "\(json.stdout)")

        // The printed fixes, run as they are, fix what a command can fix.
        for name in ["gamma", "epsilon"] { try runFix(try #require(rows[name]?.fix), h) }
        let fixed = try verify(h, ["--symbols", h.symbolsPath, build.dir])
        #expect(fixed.status == 1, "\(fixed.summary)")
        #expect(Self.rows(fixed.stdout).mapValues(\.status) == ["gamma": "ok", "delta": "noIdentifier", "epsilon": "ok", "zeta": "unreadable"], "\(fixed.stdout)")
    }

    @Test func jsonHasTheTableStatusesAndProofsAddr2lineAgreesWith() throws {
        let h = try Harness()
        let (build, alphaID, betaID) = try Self.alphaAndBeta(h, store: h.symbolsPath)

        let out = try verify(h, ["--symbols", h.symbolsPath, "--json", build.dir])
        #expect(out.status == 1, "\(out.summary)")
        #expect(try Self.jsonStatuses(out.stdout) == ["alpha x86_64": "ok \(alphaID)", "beta x86_64": "missing \(betaID)"], "\(out.stdout)")
        let table = try verify(h, ["--symbols", h.symbolsPath, build.dir])
        #expect(Self.rows(table.stdout).mapValues { "\($0.status) \($0.id)" } == ["alpha": "ok \(alphaID)", "beta": "missing \(betaID)"])

        // Each proof of alpha: addr2line, reading the debug file itself, names the same
        // function at the same line.
        let script = """
            import json, sys
            d = json.load(sys.stdin)
            print(d["ok"], d["counts"]["ok"], d["counts"]["missing"])
            for i in d["images"]:
                for p in i.get("proof", []):
                    print(i["image"], p["address"], p["symbol"], p.get("file") or "-", p.get("line") or 0)
            """
        let lines = try runChecked("python3", ["-c", script], stdin: out.stdout).stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "False 1 1", "\(out.stdout)")
        let proofs = lines.dropFirst().map { $0.split(separator: " ").map(String.init) }
        #expect(proofs.count == 3, "\(out.stdout)")
        for proof in proofs where proof.count == 5 {
            #expect(proof[0] == "alpha")
            let oracle = try runChecked("addr2line", ["-f", "-e", build.debugFile("alpha"), proof[1]]).stdout.split(separator: "\n")
            #expect(oracle.count == 2)
            #expect(String(oracle[0]) == proof[2], "addr2line: \(oracle), proof: \(proof)")
            // addr2line prints the file as the line table names it; the proof may join it to the unit's directory.
            let place = oracle.count == 2 ? oracle[1].split(separator: ":").map(String.init) : []
            #expect(place.count == 2 && (place[0] as NSString).lastPathComponent == (proof[3] as NSString).lastPathComponent, "addr2line: \(oracle), proof: \(proof)")
            #expect(place.last == proof[4], "addr2line: \(oracle), proof: \(proof)")
        }
    }

    @Test func aZipOfTheFolderGivesTheSameAnswer() throws {
        let h = try Harness()
        let (build, _, _) = try Self.alphaAndBeta(h, store: h.symbolsPath)
        // An .apk-like zip: the folder's files under lib/x86_64/, written by python3's zipfile.
        let apk = h.dir.file("app.apk")
        let zipper = """
            import os, sys, zipfile
            with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as z:
                for name in sorted(os.listdir(sys.argv[1])):
                    z.write(os.path.join(sys.argv[1], name), "lib/x86_64/" + name)
            """
        try runChecked("python3", ["-c", zipper, build.dir, apk])

        let folder = try verify(h, ["--symbols", h.symbolsPath, "--json", build.dir])
        let zipped = try verify(h, ["--symbols", h.symbolsPath, "--json", apk])
        #expect(folder.status == 1 && zipped.status == 1, "\(zipped.summary)")
        let expected = try Self.jsonStatuses(folder.stdout)
        #expect(expected.count == 2)
        let inZip = try Self.jsonStatuses(zipped.stdout)
        #expect(inZip == Dictionary(uniqueKeysWithValues: expected.map { ("lib/x86_64/" + $0.key, $0.value) }), "\(zipped.stdout)")
        // A debug file inside an archive is added by adding the archive.
        let rows = Self.rows(try verify(h, ["--symbols", h.symbolsPath, apk]).stdout)
        #expect(rows["lib/x86_64/beta"]?.fix == "stackline symbols add --symbols \(h.symbolsPath) \(apk)", "\(rows)")
    }

    @Test func serverModeFetchesFromTheDebuginfodEndpoint() throws {
        let h = try Harness()
        let (build, alphaID, betaID) = try Self.alphaAndBeta(h, store: nil)
        let server = try h.startServer(["--workers", "0"])
        let upload = try runProcess(
            TestPaths.stackline, ["symbols", "upload", "--server", server.baseURL, build.debugFile("alpha")],
            environment: ["STACKLINE_TOKEN": try h.token("symbols")], timeout: 300)
        #expect(upload.succeeded, "\(upload.summary)")
        #expect(SymbolsServerTests.storedIDs(h.symbolsPath) == [alphaID])

        // An empty local store and a TMPDIR of its own: the answer can only come from the server,
        // and nothing fetched may stay behind.
        let temporary = h.dir.file("tmp")
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        let read = try h.token("read")
        let environment = ["STACKLINE_TOKEN": read, "TMPDIR": temporary, "STACKLINE_SYMBOLS": h.dir.file("empty-store")]
        let out = try verify(h, ["--server", server.baseURL, build.dir], environment: environment)
        #expect(out.status == 1, "\(out.summary)\n\(out.stdout)")
        let rows = Self.rows(out.stdout)
        #expect(rows["alpha"].map { [$0.status, $0.id] } == ["ok", alphaID], "\(out.stdout)\n\(server.log.suffix(1500))")
        #expect(rows["beta"].map { [$0.status, $0.id] } == ["missing", betaID], "\(out.stdout)")
        #expect(out.stdout.contains("beta: missing: fetching \(betaID): the server has no debuginfo or executable for it (404)"), "\(out.stdout)")
        #expect(rows["beta"]?.fix == "STACKLINE_TOKEN=… stackline symbols upload --server \(server.baseURL) \(build.debugFile("beta"))")
        // The server was asked for both, by build-id.
        #expect(server.log.contains("/buildid/\(alphaID)/debuginfo") && server.log.contains("/buildid/\(betaID)/debuginfo"), "\(server.log.suffix(2000))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary) == [])
        #expect(!out.stdout.contains(read) && !out.stderr.contains(read))

        // A token the endpoint refuses: the image is missing, and the answer says so.
        let refused = try verify(h, ["--server", server.baseURL, build.dir], environment: ["STACKLINE_TOKEN": "not-a-token"])
        #expect(refused.status == 1)
        #expect(refused.stdout.contains("the server answered 401"), "\(refused.stdout)")
        // --server and --symbols together: a usage error.
        let both = try verify(h, ["--server", server.baseURL, "--symbols", h.symbolsPath, build.dir], environment: environment)
        #expect(both.status == 64, "\(both.summary)")
    }

    @Test func anXcarchiveIsCheckedSliceBySliceAgainstItsDSYM() throws {
        let h = try Harness()
        // The layout Xcode archives to: the app under Products/Applications, its dSYM under dSYMs.
        let archive = h.dir.file("Sample.xcarchive")
        let app = archive + "/Products/Applications/Sample.app"
        try FileManager.default.createDirectory(atPath: app, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: archive + "/dSYMs", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: MachOFixtures.executable, toPath: app + "/Sample")
        try "<plist/>".write(toFile: app + "/Info.plist", atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: MachOFixtures.dSYM, toPath: archive + "/dSYMs/Sample.app.dSYM")
        let uuids = try MachOFixtures.uuids(MachOFixtures.executable)
        #expect(uuids.count == 2)

        let before = try verify(h, ["--symbols", h.symbolsPath, "--json", archive])
        #expect(before.status == 1, "\(before.summary)")
        let image = "Products/Applications/Sample.app/Sample"
        #expect(try Self.jsonStatuses(before.stdout) == Dictionary(uniqueKeysWithValues: uuids.map { ("\(image) \($0.key)", "missing \($0.value)") }), "\(before.stdout)")
        let dwarf = archive + "/dSYMs/Sample.app.dSYM/Contents/Resources/DWARF/Sample"
        let carriers = try runChecked(
            "python3", ["-c", "import json, sys\nprint(sorted({i.get('debugFileInBuild') for i in json.load(sys.stdin)['images']}))"], stdin: before.stdout)
        #expect(carriers.stdout == "['\(dwarf)']\n", "\(before.stdout)")

        #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, archive + "/dSYMs/Sample.app.dSYM"]).succeeded)
        let after = try verify(h, ["--symbols", h.symbolsPath, "--json", archive])
        #expect(after.status == 0, "\(after.summary)\n\(after.stdout)")
        #expect(try Self.jsonStatuses(after.stdout) == Dictionary(uniqueKeysWithValues: uuids.map { ("\(image) \($0.key)", "ok \($0.value)") }), "\(after.stdout)")
    }

    @Test func aPathThatHoldsNoImageIsAUsageError() throws {
        let h = try Harness()
        let missing = try verify(h, ["--symbols", h.symbolsPath, h.dir.file("no-such-build")])
        #expect(missing.status == 64 && missing.stderr.contains("no such file or directory"), "\(missing.summary)")
        let empty = h.dir.file("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        try "notes\n".write(toFile: empty + "/README.txt", atomically: true, encoding: .utf8)
        let nothing = try verify(h, ["--symbols", h.symbolsPath, empty])
        #expect(nothing.status == 64 && nothing.stderr.contains("holds no ELF or Mach-O image"), "\(nothing.summary)")
        let text = try verify(h, ["--symbols", h.symbolsPath, empty + "/README.txt"])
        #expect(text.status == 64 && text.stderr.contains("not a debug file"), "\(text.summary)")
    }
}
