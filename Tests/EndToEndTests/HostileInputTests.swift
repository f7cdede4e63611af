import Foundation
import TestSupport
import Testing

/// Issue 10's hostile inputs, one class each, run through the real `stackline` binary under a
/// 1 GiB address-space limit (`prlimit --as`) and a 10 s guard. Each file is either refused with a
/// message naming the problem or parsed to what the test built into it; none may die by a signal.
@Suite("Hostile input")
struct HostileInputTests {
    static let memoryLimit = 1 << 30
    static let guardSeconds = 10.0

    /// Runs `stackline ARGS` with the limits; a timeout throws, a signal fails the test.
    func bounded(_ arguments: [String], environment: [String: String]? = nil) throws -> ProcessOutput {
        let output = try runProcess(
            try findTool("prlimit"), ["--as=\(Self.memoryLimit)", "--", TestPaths.stackline] + arguments,
            environment: environment, timeout: Self.guardSeconds)
        #expect(!output.signaled, "died of signal \(output.status): \(output.summary)")
        return output
    }

    func write(_ data: Data, _ name: String, in dir: TempDirectory) -> String {
        let path = dir.file(name)
        FileManager.default.createFile(atPath: path, contents: data)
        return path
    }

    /// Parses `data`, expecting a refusal whose message contains `message`.
    func expectRefused(_ data: Data, name: String, message: String) throws {
        let dir = try TempDirectory("hostile")
        defer { dir.remove() }
        let output = try bounded(["parse", write(data, name, in: dir)])
        #expect(output.status == 1, "\(name): \(output.summary)")
        #expect(output.stderr.contains(message), "\(name): expected «\(message)» in: \(output.stderr.prefix(400))")
    }

    /// Parses `data` as JSON (`parse --json`) and returns the decoded raw report.
    func parsed(_ data: Data, name: String) throws -> [String: Any] {
        let dir = try TempDirectory("hostile")
        defer { dir.remove() }
        let output = try bounded(["parse", "--json", write(data, name, in: dir)])
        try #require(output.succeeded, "\(name): \(output.summary)")
        return try #require(JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any])
    }

    // MARK: 1. invalid UTF-8 never reaches the JSON5 decoder

    /// The 71-byte shape from the issue, and the same bad bytes in each JSON format's detection
    /// path. The offset is where the test put the first 0xFE.
    @Test(arguments: [
        ("kscrash", #"{"binary_images":[{"image_addr":1},{"#, #" "cpu":1}],"crash":{}}"#),
        ("apple-ips", "{\"bug_type\":\"309\"}\n{\"usedImages\":[{\"base\":1},{", #" "x":1}]}"#),
        ("sdk-lag", #"{"dyld_images":[{"name":"a","base_addr":1},{"#, #" "x":1}]}"#),
        ("swift-json", #"{"kind":"crashReport","crashReport":1,"threads":[{"#, #" "x":1}]}"#),
    ])
    func invalidUTF8IsRefusedWithItsOffset(format: String, before: String, after: String) throws {
        let data = Data(before.utf8) + Data([0xFE, 0xFE]) + Data(after.utf8)
        try expectRefused(data, name: "\(format).json", message: "not valid UTF-8 at byte \(before.utf8.count)")
    }

    // MARK: 2. text parsers are linear

    static let longBlanks = blanks(100_000)
    static func blanks(_ count: Int) -> String { String(repeating: " ", count: count) }

    static func appleCrash(frameLines: [String], header: [String] = []) -> String {
        (["Incident Identifier: 1", "Crashed Thread: 0", "Code Type: ARM-64"] + header + ["", "Thread 0 Crashed:"]
            + frameLines + ["", "Binary Images:",
                "0x1000 - 0x1fff App arm64 <00112233445566778899aabbccddeeff> /App", ""]).joined(separator: "\n")
    }

    @Test func aLongBlankFrameLineInACrashReportIsAWarningNotAHang() throws {
        let text = Self.appleCrash(frameLines: [
            "0   App  0x1010 0x1000 + 16", "1" + Self.longBlanks + "x", "2   App  0x1020 0x1000 + 32",
        ])
        let report = try parsed(Data(text.utf8), name: "long.crash")
        let frames = try #require(((report["threads"] as? [[String: Any]])?.first)?["frames"] as? [[String: Any]])
        #expect(frames.count == 2)
        #expect((report["warnings"] as? [String])?.contains { $0.hasPrefix("line 7: frame not understood") } == true)
    }

    @Test func longBlankHeaderAndImageLinesParse() throws {
        let text = Self.appleCrash(
            frameLines: ["0   App  0x1010 0x1000 + 16"],
            // 20,000 blanks each, so the thread headings stay inside the 64 KiB that detection reads.
            header: ["Process:" + Self.blanks(20_000) + "App [1]", "A" + Self.blanks(20_000) + ":", "0x" + Self.blanks(20_000)])
        let report = try parsed(Data(text.utf8), name: "header.crash")
        #expect((report["app"] as? [String: Any])?["name"] as? String == "App")
    }

    @Test func aLongLogcatLineAndALongTombstoneLineAreLinear() throws {
        let frame = "    #00 pc 0000000000001000  /system/lib64/libc.so (abort+4) (BuildId: 00112233445566778899aabbccddeeff00112233)"
        let logcatFrame = "11-21 10:00:00.123  1234  1234 F DEBUG   : " + frame
        // Long lines that are not frames end a backtrace, so they stand before it; "#01 pc …" inside
        // it is a warning and the backtrace goes on.
        let text = [
            "pid: 1, tid: 1, name: x  >>> app <<<", "signal 6 (SIGABRT), code -6 (SI_TKILL), fault addr --------",
            "11-21 10:00:00.123" + Self.blanks(20_000) + "x", "A/" + Self.blanks(20_000), "pid: " + Self.blanks(20_000),
            "backtrace:", logcatFrame, "#01 pc" + Self.blanks(20_000) + "1", frame, "",
        ].joined(separator: "\n")
        let report = try parsed(Data(text.utf8), name: "tombstone.txt")
        let frames = try #require(((report["threads"] as? [[String: Any]])?.first)?["frames"] as? [[String: Any]])
        #expect(frames.count == 2)
        #expect((report["exception"] as? [String: Any])?["signal"] as? String == "SIGABRT")
    }

    @Test func aLongSwiftBacktraceLineIsAWarning() throws {
        let text = [
            "*** Program crashed: Bad pointer dereference at 0x0 ***", "Thread 0 crashed:", "",
            "0 0x0000000000001010 in f()", "1" + Self.longBlanks + "[ra]" + Self.longBlanks, "",
            "Images:", "0x1000–0x2000 00112233445566778899aabbccddeeff00112233 a /a", "",
        ].joined(separator: "\n")
        let report = try parsed(Data(text.utf8), name: "swift.txt")
        let frames = try #require(((report["threads"] as? [[String: Any]])?.first)?["frames"] as? [[String: Any]])
        #expect(frames.count == 1)
    }

    /// 100 threads of 40 frames: every frame arrives (counted from what the test wrote).
    @Test func aRealisticLargeTombstoneParsesCompletely() throws {
        var lines = ["ABI: 'arm64'", "signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0"]
        for thread in 0..<100 {
            lines += ["--- --- --- --- --- --- --- --- --- --- --- --- --- --- --- ---",
                "pid: 1, tid: \(thread + 1), name: worker-\(thread)  >>> com.example <<<", "", "backtrace:"]
            for frame in 0..<40 {
                let library = "/system/lib64/lib\(frame % 7).so"
                lines.append(String(format: "      #%02d pc %016llx  %@ (fn%d+12) (BuildId: %040d)", frame, 0x1000 + frame * 16, library, frame, frame % 7))
            }
            lines.append("")
        }
        let report = try parsed(Data(lines.joined(separator: "\n").utf8), name: "big-tombstone.txt")
        let threads = try #require(report["threads"] as? [[String: Any]])
        #expect(threads.count == 100)
        #expect(threads.allSatisfy { ($0["frames"] as? [Any])?.count == 40 })
        #expect((report["images"] as? [Any])?.count == 7)
    }

    // MARK: 3. lag profile trees

    static func lag(profile: [(depth: Int64, count: Int)]) -> Data {
        let nodes = profile.map { #"{"depth":\#($0.depth),"count":\#($0.count),"costTime":1}"# }.joined(separator: ",")
        return Data(#"{"type":"lag","dyld_images":[{"name":"/App","uuid":"00112233445566778899aabbccddeeff","base_addr":4096}],"thread_profile":[\#(nodes)]}"#.utf8)
    }

    @Test func aDepthTheTreeCannotHaveIsRefused() throws {
        try expectRefused(
            Self.lag(profile: [(0, 1), (4_294_967_296, 1)]), name: "lag.json",
            message: "thread_profile[1]: depth 4294967296 right after depth 0")
        try expectRefused(Self.lag(profile: [(3, 1)]), name: "lag.json", message: "the first node is the root, at depth 0")
        try expectRefused(Self.lag(profile: [(0, 1), (-1, 1)]), name: "lag.json", message: "negative depth or count")
    }

    @Test func aChainPastTheLimitsIsRefusedAndOneWithinThemIsKept() throws {
        try expectRefused(
            Self.lag(profile: (0..<200_000).map { (Int64($0), 1) }), name: "chain.json",
            message: "200000 thread_profile nodes, over the limit of 100000")
        try expectRefused(
            Self.lag(profile: (0..<5_000).map { (Int64($0), 1) }), name: "chain.json",
            message: "thread_profile[4097] is at depth 4097, over the limit of 4096")
        try expectRefused(
            Self.lag(profile: (0..<100_001).map { (Int64($0 % 2), 1) }), name: "wide.json",
            message: "100001 thread_profile nodes, over the limit of 100000")
        let report = try parsed(Self.lag(profile: (0..<4_097).map { (Int64($0), 1) }), name: "deep.json")
        #expect(((report["lag"] as? [String: Any])?["profile"] as? [Any])?.count == 4_097)
    }

    // MARK: 7. limits, refused with the limit in the message

    @Test func pastTheFrameThreadAndImageLimitsIsRefused() throws {
        let frames = (0..<131_073).map { "\($0) 0x\(String(0x1000 + $0, radix: 16))" }.joined(separator: "\n")
        try expectRefused(
            Data("*** Program crashed: x ***\nThread 0 crashed:\n\n\(frames)\n".utf8), name: "frames.txt",
            message: "thread 0 has more than 131072 frames")
        let threads = (0..<10_001).map { "Thread \($0):\n0 0x1000" }.joined(separator: "\n")
        try expectRefused(
            Data("*** Program crashed: x ***\n\(threads)\n".utf8), name: "threads.txt", message: "more than 10000 threads")
        let images = (0..<10_001).map { "0x\(String($0 * 0x1000 + 0x1000, radix: 16))–0x\(String($0 * 0x1000 + 0x1fff, radix: 16)) <no build ID> l\($0) /l\($0)" }
        let text = "*** Program crashed: x ***\nThread 0 crashed:\n0 0x1000\n\nImages:\n" + images.joined(separator: "\n") + "\n"
        try expectRefused(Data(text.utf8), name: "images.txt", message: "more than 10000 images")
    }

    @Test func jsonNestingAndValueCountAreBoundedBeforeDecoding() throws {
        let deep = #"{"binary_images":"# + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + #","image_addr":1}"#
        try expectRefused(Data(deep.utf8), name: "deep.json", message: "JSON nested deeper than 100 levels")
        let many = #"{"binary_images":[{"image_addr":1}],"x":["# + String(repeating: "0,", count: 4_000_001) + "0]}"
        try expectRefused(Data(many.utf8), name: "values.json", message: "more than 4000000 JSON values")
    }

    @Test func aReportOverTheSizeLimitIsRefusedAtSubmitWithTheLimit() throws {
        let dir = try TempDirectory("hostile")
        defer { dir.remove() }
        let path = write(Data(count: 64 << 20 + 1), "big.crash", in: dir)
        let output = try bounded(["submit", "--db", dir.file("db.sqlite"), path])
        #expect(output.status == 1)
        #expect(output.stderr.contains("larger than 67108864 bytes"), "\(output.stderr)")
    }

    /// A million unparseable lines inside a thread: the report keeps the first warnings and a count.
    @Test func warningsAreCapped() throws {
        let junk = Array(repeating: "9 ???", count: 50_000)
        let report = try parsed(Data(Self.appleCrash(frameLines: ["0   App  0x1010 0x1000 + 16"] + junk).utf8), name: "junk.crash")
        let warnings = try #require(report["warnings"] as? [String])
        #expect(warnings.count == 201)
        #expect(warnings.last == "… and 49800 more warnings")
    }

    // MARK: 8. values are never silently changed

    @Test func unreadableAddressesAndBuildIDsAreWarningsAndMalformed() throws {
        let swift = #"""
            {"kind":"crashReport","crashReport":1,"description":"x","threads":[{"crashed":true,"frames":[
            {"kind":"programCounter","address":1e40},{"kind":"returnAddress","address":"0x1010"}]}],
            "images":[{"name":"a","buildId":"hello-world-deadbeef","baseAddress":"0x1000","endOfText":"0x2000"},
            {"name":"b","buildId":"zz","baseAddress":"0x3000","endOfText":"0x4000"}]}
            """#
        let report = try parsed(Data(swift.utf8), name: "swift.json")
        let warnings = try #require(report["warnings"] as? [String])
        #expect(warnings.contains { $0.contains("'hello-world-deadbeef' is not hexadecimal") })
        #expect(warnings.contains { $0.contains("'zz'") })
        #expect(warnings.contains { $0.contains("1" + String(repeating: "0", count: 40) + " is not an address") }, "\(warnings)")
        let images = try #require(report["images"] as? [[String: Any]])
        #expect(images.allSatisfy { $0["id"] == nil }, "no image keeps an altered id: \(images)")
        let frames = try #require(((report["threads"] as? [[String: Any]])?.first)?["frames"] as? [[String: Any]])
        #expect(frames.count == 2)
        #expect(frames[0]["malformed"] as? Bool == true)
        #expect(frames[1]["address"] as? String == "0x1010")

        let kscrash = #"""
            {"report":{"id":"x"},"binary_images":[{"image_addr":4096,"image_size":4096,"name":"/a","uuid":"00112233-4455-6677-8899-aabbccddeeff"}],
            "crash":{"error":{"type":"signal"},"threads":[{"index":0,"crashed":true,"backtrace":{"contents":[
            {"instruction_addr":1e40},{"instruction_addr":4112},{"instruction_addr":-1}]}}]}}
            """#
        let ks = try parsed(Data(kscrash.utf8), name: "ks.json")
        let ksFrames = try #require(((ks["threads"] as? [[String: Any]])?.first)?["frames"] as? [[String: Any]])
        #expect(ksFrames.map { $0["malformed"] as? Bool ?? false } == [true, false, true])
        #expect(ksFrames[1]["address"] as? String == "0x1010")
    }

    // MARK: a batch survives a bad file

    @Test func aBatchSubmitStoresEveryGoodReportAroundABadOne() throws {
        let dir = try TempDirectory("hostile")
        defer { dir.remove() }
        let good = try CrashFixture.shared.report()
        let folder = dir.file("in")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: folder + "/1.json", contents: good)
        FileManager.default.createFile(
            atPath: folder + "/2.json",
            contents: Data(#"{"binary_images":[{"image_addr":1},{"#.utf8) + Data([0xFE, 0xFE]) + Data(#" "cpu":1}]}"#.utf8))
        // A second good report: the same crash with different bytes, so it is not a duplicate.
        FileManager.default.createFile(atPath: folder + "/3.json", contents: good + Data("\n".utf8))
        let db = dir.file("db.sqlite")
        let output = try bounded(["submit", "--db", db, folder])
        #expect(output.status == 1, "\(output.summary)")
        #expect(output.stderr.contains("2.json: not valid UTF-8 at byte 36"), "\(output.stderr)")
        let count = try runChecked(try findTool("sqlite3"), [db, "SELECT COUNT(*) FROM reports"])
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "2")
    }
}
