import Foundation
import ReportModel
import TestSupport
import Testing

/// A C program whose one function is named by `HostileText` and whose source file name carries an SGR sequence and a newline, so a
/// debug file hands the symbolicator hostile function and file names.
struct HostileProgram {
    static let function = HostileText.value
    static let escapedFunction = HostileText.escaped
    static let sourceName = "src\u{1b}[32m\nFORGED.c"
    static let escapedSourceName = #"src\u{1b}[32m\nFORGED.c"#

    var program: FixtureProgram
    /// File addresses inside the hostile function and inside main.
    var functionAddress: UInt64
    var mainAddress: UInt64

    /// Compiles with a placeholder identifier of the same length, then rewrites every copy of
    /// it (symbol table and DWARF strings) with the hostile bytes; the build id is unchanged.
    static func build(in h: Harness) throws -> HostileProgram {
        let length = function.utf8.count
        let placeholder = "evil_" + String(repeating: "x", count: length - 5)
        let source = h.dir.file(sourceName)
        try """
            int \(placeholder)(int x) { return x * 3 + 1; }
            int main(int argc, char **argv) { return \(placeholder)(argc); }
            """.write(toFile: source, atomically: true, encoding: .utf8)
        let compiled = h.dir.file("hostile-unpatched")
        try runChecked(try findTool("gcc"), ["-O0", "-g", "-Wl,--build-id", "-fPIE", "-pie", "-o", compiled, source])
        let symbols = try runChecked("/usr/bin/nm", [compiled]).stdout.split(separator: "\n")
        func address(of name: String) throws -> UInt64 {
            let line = try #require(symbols.first { $0.hasSuffix(" " + name) })
            return try #require(UInt64(line.split(separator: " ")[0], radix: 16))
        }
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: compiled)))
        let needle = Array(placeholder.utf8), replacement = Array(function.utf8)
        var copies = 0
        var i = 0
        while i + needle.count <= bytes.count {
            if bytes[i] == needle[0] && Array(bytes[i..<i + needle.count]) == needle {
                bytes.replaceSubrange(i..<i + needle.count, with: replacement)
                copies += 1
                i += needle.count
            } else {
                i += 1
            }
        }
        #expect(copies >= 2, "the name in .symtab and in DWARF")
        let path = h.dir.file("hostile-program")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let buildID = try #require(try readelfBuildID(path))
        let load = UInt64.random(in: 0x5500_0000_0000...0x7f00_0000_0000) & ~0xfff
        // The report names the image by a hostile path; the store finds it by build id.
        let program = FixtureProgram(
            name: HostileText.json, path: "/Applications/" + HostileText.json, buildID: buildID, preferredBase: 0,
            loadAddress: load)
        return HostileProgram(program: program, functionAddress: try address(of: placeholder) + 4, mainAddress: try address(of: "main") + 8)
    }

    var frames: [PlannedFrame] {
        [
            PlannedFrame(program: program, fileAddress: functionAddress, kind: .pc),
            PlannedFrame(program: program, fileAddress: mainAddress, kind: .returnAddress),
        ]
    }
}

@Suite(.serialized) struct TerminalSafetyTests {
    /// Every human-readable output and every error message of the real binary shows hostile
    /// names escaped: no ESC, BEL, CR, BS, DEL, C1 or bidi control reaches the terminal, and no
    /// embedded newline starts a line of its own. JSON output keeps the exact values.
    @Test func hostileNamesComeOutEscapedEverywhere() throws {
        let h = try Harness()
        let hostile = try HostileProgram.build(in: h)
        let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, h.dir.file("hostile-program")])
        #expect(added.status == 0, "\(added.stderr)")
        let j = HostileText.json

        // KSCrash: app, version, OS, thread name, exception type and reason, image name and path.
        var crash = ReportBuilder.kscrash([hostile.program], hostile.frames)
        for (plain, replaced) in [
            (#""dispatch_queue": "com.apple.main-thread""#, #""dispatch_queue": "\#(j)""#),
            (#""CFBundleExecutable": "fixture""#, #""CFBundleExecutable": "\#(j)""#),
            (#""CFBundleShortVersionString": "1.0""#, #""CFBundleShortVersionString": "\#(j)""#),
            (#""system_version": "17.2""#, #""system_version": "\#(j)""#),
            (#""exception_name": "EXC_BAD_ACCESS""#, #""exception_name": "\#(j)""#),
            (#""type": "mach"}"#, #""type": "mach", "reason": "\#(j)"}"#),
        ] {
            #expect(crash.contains(plain))
            crash = crash.replacingOccurrences(of: plain, with: replaced)
        }
        // A lag report: app name, sample timestamp, profile nodes in the hostile function.
        var lag = ReportBuilder.lag([hostile.program], samples: [hostile.frames], profile: hostile.frames)
        for (plain, replaced) in [
            (#""app": {"name": "fixture""#, #""app": {"name": "\#(j)""#),
            (#""timestamp": "0 ms""#, #""timestamp": "\#(j)""#),
        ] {
            #expect(lag.contains(plain))
            lag = lag.replacingOccurrences(of: plain, with: replaced)
        }
        // Refused by the parser, stored with --accept-unparsed: the reason quotes the value.
        let refused = lag.replacingOccurrences(of: #"{"type": "lag""#, with: #"{"type": "\#(j)""#)

        // File names are input too.
        let folder = h.dir.file("in")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let names = ["a-crash\u{1b}[31m\nFORGED.json", "b-lag\r\u{9b}.json", "c-refused\u{202e}.json"]
        for (name, text) in zip(names, [crash, lag, refused]) {
            try Data(text.utf8).write(to: URL(fileURLWithPath: folder + "/" + name))
        }

        var outputs: [(String, ProcessOutput)] = []
        func run(_ arguments: [String], stdin: Data? = nil) throws -> ProcessOutput {
            let out = try h.stackline(arguments, stdin: stdin)
            #expect(!out.signaled, "\(out.summary)")
            outputs.append((arguments.joined(separator: " "), out))
            return out
        }

        let submitted = try run(["submit", "--accept-unparsed", folder])
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let ids = submitted.stdout.split(separator: "\n").compactMap { Int64($0.split(separator: "\t").first ?? "") }
        #expect(ids.count == 3)
        #expect(submitted.stdout.contains(#"a-crash\u{1b}[31m\nFORGED.json"#))
        let (crashId, lagId, refusedId) = (ids[0], ids[1], ids[2])
        let master = try h.startMaster(["--workers", "1", "--once"])
        #expect(try master.waitForExit() == 0)

        for id in [crashId, lagId] {
            let text = try run(["report", "\(id)"])
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.stdout.contains(HostileProgram.escapedFunction), "the function name from the debug file")
            #expect(text.stdout.contains(HostileText.escaped), "names from the report")
            #expect(text.stdout.contains(HostileProgram.escapedSourceName))
            let apple = try run(["report", "\(id)", "--format", "apple"])
            #expect(apple.status == 0, "\(apple.stderr)")
            #expect(apple.stdout.contains(HostileProgram.escapedFunction))
            // JSON keeps the exact values.
            let json = try run(["report", "\(id)", "--format", "json"])
            let report = try JSONDecoder().decode(SymbolicatedReport.self, from: Data(json.stdout.utf8))
            #expect(report.app?.name == HostileText.value)
            let frames = report.threads.flatMap(\.frames) + (report.lag?.samples.flatMap(\.frames) ?? [])
            #expect(frames.first?.function == HostileProgram.function)
            #expect(frames.first?.file?.hasSuffix(HostileProgram.sourceName) == true)
            #expect(frames.first?.image == HostileText.value)
        }
        let crashText = try #require(outputs.first { $0.0 == "report \(crashId)" }?.1.stdout)
        #expect(crashText.contains("Thread 0 \"\(HostileText.escaped)\" crashed:"))

        let groups = try run(["groups"])
        #expect(groups.stdout.contains(#"\u{1b}[31mRED"#), "\(groups.stdout)")
        let groupsJSON = try run(["groups", "--json"])
        let fingerprints = try #require(try JSONSerialization.jsonObject(with: Data(groupsJSON.stdout.utf8)) as? [[String: Any]])
            .compactMap { $0["fingerprint"] as? String }
        #expect(fingerprints.count == 2)
        for fingerprint in fingerprints {
            let group = try run(["group", fingerprint])
            #expect(group.status == 0, "\(group.stderr)")
            #expect(group.stdout.contains(HostileProgram.escapedFunction))
        }
        // App names (and the crash's version) from the reports.
        #expect(outputs.filter { $0.0.hasPrefix("group ") }.allSatisfy { $0.1.stdout.contains("App: " + HostileText.escaped) })

        _ = try run(["status"])
        let failed = try run(["status", "\(refusedId)"])
        #expect(failed.stdout.contains("state\tfailed"))
        #expect(failed.stdout.contains(HostileText.escaped), "\(failed.stdout)")
        let failedReport = try run(["report", "\(refusedId)"])
        #expect(failedReport.status == 1)
        #expect(failedReport.stderr.contains(HostileText.escaped))

        for name in names {
            let parsed = try run(["parse", folder + "/" + name])
            #expect(parsed.stdout.contains(HostileText.escaped) || parsed.stderr.contains(HostileText.escaped), "\(name)")
        }
        // A directory entry named with control characters, refused: the error escapes it.
        let strays = h.dir.file("strays")
        try FileManager.default.createDirectory(atPath: strays, withIntermediateDirectories: true)
        try Data("not a report\n".utf8).write(to: URL(fileURLWithPath: strays + "/x\u{1b}]52;c;QQ==\u{7}\nFORGED"))
        let strayRun = try run(["submit", strays])
        #expect(strayRun.status == 1)
        #expect(strayRun.stderr.split(separator: "\n").count == 1, "\(strayRun.stderr)")

        // lookup: names from the debug file, and the input line it refuses.
        let lookup = try run([
            "lookup", "--symbols", h.symbolsPath, "--build-id", hostile.program.buildID, hex(hostile.functionAddress, width: 0),
        ])
        #expect(lookup.status == 0, "\(lookup.stderr)")
        #expect(lookup.stdout.split(separator: "\n").first.map(String.init) == HostileProgram.escapedFunction)
        #expect(lookup.stdout.contains(HostileProgram.escapedSourceName))
        let badLine = try run(
            ["lookup", "--symbols", h.symbolsPath, "--build-id", hostile.program.buildID],
            stdin: Data("0x\u{1b}[2J\u{8}X\n".utf8))
        #expect(badLine.status == 1)
        #expect(badLine.stderr.contains(#"not a hex address: 0x\u{1b}[2J\u{8}X"#), "\(badLine.stderr)")

        for (command, out) in outputs {
            if command.hasSuffix(" json") || command.hasSuffix(" --json") {
                // JSON escapes C0 controls itself and is left as it is (DEL, C1 and bidi
                // characters are legal unescaped there); it must still decode to the exact values.
                #expect(out.stdout.unicodeScalars.first { $0.value < 0x20 && $0 != "\n" } == nil, "stdout of \(command)")
                continue
            }
            #expect(HostileText.problem(in: out.stdout) == nil, "stdout of \(command): \(HostileText.problem(in: out.stdout) ?? "")")
            #expect(HostileText.problem(in: out.stderr) == nil, "stderr of \(command): \(HostileText.problem(in: out.stderr) ?? "")")
        }
    }
}
