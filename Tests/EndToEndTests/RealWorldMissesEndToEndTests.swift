import Foundation
import TestSupport
import Testing

/// Issue 34 §3 through `stackline submit --wait` with a real master and workers: the three
/// classes of real reports that once failed reach the group their own text names. Expected
/// values are read from the samples (regular expressions, `JSONSerialization`).
@Suite(.serialized) struct RealWorldMissesEndToEndTests {
    static let wild = TestPaths.packageRoot + "/Tests/Fixtures/wild"

    /// `submit --wait --json` of `paths`: each entry's `report` document (with its `group`).
    func submitted(_ h: Harness, _ paths: [String]) throws -> [[String: Any]] {
        let out = try h.stackline(["submit", "--wait", "--timeout", "200", "--json"] + paths)
        #expect(out.status == 0, "\(out.summary)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]], "\(out.stdout)")
        #expect(entries.count == paths.count)
        return try entries.map { try #require($0["report"] as? [String: Any], "\($0)") }
    }

    func title(_ report: [String: Any]) -> String { (report["group"] as? [String: Any])?["title"] as? String ?? "" }
    func parts(_ report: [String: Any]) -> [String?] { (report["threads"] as? [[String: Any]] ?? []).map { $0["part"] as? String } }

    /// The simulator's fatalError report, as written and with libswiftCore's text in
    /// `crash_info_message2`: the group title is the Swift runtime's message either way, never
    /// the simulator's annotation.
    @Test func aSwiftFatalErrorTitlesItsGroupOverTheSimulatorsAnnotation() throws {
        let h = try Harness()
        let text = try String(contentsOfFile: Self.wild + "/kscrash/fatal-error-simulator.json", encoding: .utf8)
        let message2 = text.replacingOccurrences(of: #""crash_info_message": "iOS_Swift/"#, with: #""crash_info_message2": "iOS_Swift/"#)
        #expect(message2 != text)
        // "iOS_Swift/ViewController.swift:53: Fatal error: Hello fatal\n" in the file: the title's words.
        let stated = try #require(text.range(of: #"Fatal error: [^\\"]*"#, options: .regularExpression).map { String(text[$0]) })
        let paths = try h.write([Data(text.utf8), Data(message2.utf8)])
        let master = try h.startMaster(["--workers", "1"])
        defer { master.signal(SIGTERM); _ = try? master.waitForExit() }
        for report in try submitted(h, paths) {
            #expect(title(report).hasPrefix(stated), "\(title(report))")
            #expect(!title(report).contains("CoreSimulator"), "\(title(report))")
        }
    }

    /// A recrash as KSCrash's C writer lays it out, once refused: stored, and grouped on the
    /// crash (its top frame), with the handler's thread kept as part `recrash`.
    @Test func aRecrashIsGroupedOnTheCrashNotTheHandler() throws {
        let h = try Harness()
        let path = Self.wild + "/kscrash/recrash-report.json"
        let root = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        func topSymbol(_ thread: Any?) -> String? {
            (((thread as? [String: Any])?["backtrace"] as? [String: Any])?["contents"] as? [[String: Any]])?.first?["symbol_name"] as? String
        }
        let original = ((root["recrash_report"] as? [String: Any])?["crash"] as? [String: Any])?["threads"] as? [Any]
        let crashSymbol = try #require(topSymbol(original?.first))
        let handlerSymbol = try #require(topSymbol((root["crash"] as? [String: Any])?["crashed_thread"]))
        let master = try h.startMaster(["--workers", "1"])
        defer { master.signal(SIGTERM); _ = try? master.waitForExit() }
        let report = try submitted(h, [path])[0]
        #expect(report["format"] as? String == "kscrash")
        #expect(parts(report) == [nil, "recrash"])
        #expect(title(report).contains(crashSymbol), "\(title(report))")
        #expect(!title(report).contains(handlerSymbol), "\(title(report))")
    }

    /// The tombstone whose abort message is an ASan report: the group title names ASan's error,
    /// and ASan's two stacks are kept beside the tombstone's own.
    @Test func anASanTombstoneTitlesItsGroupWithTheError() throws {
        let h = try Harness()
        let path = Self.wild + "/android/tombstone-asan-heap-use-after-free.txt"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let error = try #require(text.range(of: #"AddressSanitizer: [a-z-]+"#, options: .regularExpression).map { String(text[$0]) })
        let master = try h.startMaster(["--workers", "1"])
        defer { master.signal(SIGTERM); _ = try? master.waitForExit() }
        let report = try submitted(h, [path])[0]
        #expect(report["format"] as? String == "android-tombstone")
        #expect(title(report).contains(error), "\(title(report))")
        #expect(parts(report) == [nil, "sanitizer", "sanitizer"])
    }
}
