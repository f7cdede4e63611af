import Foundation
import TestSupport
import Testing

/// Real KSCrash samples and real Swift crashes through `stackline submit --wait` with a real
/// master and workers: the device's names, the message, the app and the group they reach.
@Suite(.serialized) struct KSCrashSwiftFidelityEndToEndTests {
    static let wild = TestPaths.packageRoot + "/Tests/Fixtures/wild"

    /// `submit --wait --json` of `paths`: each entry's `report` document (with its `group`).
    func submitted(_ h: Harness, _ paths: [String], extra: [String] = []) throws -> [[String: Any]] {
        let out = try h.stackline(["submit", "--wait", "--timeout", "200", "--json"] + extra + paths)
        #expect(out.status == 0, "\(out.summary)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]], "\(out.stdout)")
        #expect(entries.count == paths.count)
        return try entries.map { try #require($0["report"] as? [String: Any], "\($0)") }
    }

    func group(_ report: [String: Any]) -> [String: Any] { report["group"] as? [String: Any] ?? [:] }

    func crashedFrames(_ report: [String: Any]) -> [[String: Any]] {
        let threads = report["threads"] as? [[String: Any]] ?? []
        let crashed = threads.first { $0["crashed"] as? Bool == true && $0["part"] == nil }
        return (crashed?["frames"] as? [[String: Any]] ?? []).filter { $0["inlined"] as? Bool != true }
    }

    /// The same crash as KSCrash writes it (JSON) and as its Apple-style filter prints it (text):
    /// the same frames, message and group. Both come from KSCrash's Example-Reports.
    @Test func kscrashJSONAndItsAppleTextTwinAgree() throws {
        let h = try Harness()
        let master = try h.startMaster(["--workers", "2"])
        defer { master.signal(SIGTERM); _ = try? master.waitForExit() }
        let reports = try submitted(h, [Self.wild + "/kscrash/CrashInHandler.json", Self.wild + "/kscrash/CrashInHandler.txt"])
        let (json, text) = (reports[0], reports[1])
        #expect(json["format"] as? String == "kscrash")
        #expect(text["format"] as? String == "apple-crash")

        // Frames of the crashed thread: addresses as the two files print them.
        let jsonFrames = crashedFrames(json), textFrames = crashedFrames(text)
        #expect(jsonFrames.count == 16)
        #expect(jsonFrames.map { $0["address"] as? String } == textFrames.map { $0["address"] as? String })
        // The device's name for the top frame, kept without a debug file (the text twin prints
        // "-[Crasher dereferenceBadPointer] + 24").
        #expect(jsonFrames.first?["status"] as? String == "deviceSymbol", "\(jsonFrames.first ?? [:])")
        #expect(jsonFrames.first?["function"] as? String == "-[Crasher dereferenceBadPointer]")
        #expect(jsonFrames.first?["offset"] as? Int == 24)

        let jsonException = json["exception"] as? [String: Any] ?? [:], textException = text["exception"] as? [String: Any] ?? [:]
        #expect(jsonException["message"] as? String == textException["message"] as? String)
        #expect((json["app"] as? [String: Any])?["name"] as? String == "Crash-Tester")
        #expect(json["os"] as? String == "iPhone OS 4.3.3 (8J2)")
        #expect(json["os"] as? String == text["os"] as? String)
        #expect(group(json)["fingerprint"] as? String != nil)
        #expect(group(json)["fingerprint"] as? String == group(text)["fingerprint"] as? String, "\(group(json)) vs \(group(text))")
        #expect(group(json)["count"] as? Int == 2)

        // The handler's own crash stays a labelled part and is not what the report groups by.
        let recrash = (json["threads"] as? [[String: Any]] ?? []).filter { $0["part"] as? String == "recrash" }
        #expect(recrash.count == 1)
        #expect((group(json)["title"] as? String)?.contains("vfprintf") == false, "\(group(json))")
    }

    /// KSCrash's memory termination: no threads, no images. It is stored, processed and grouped
    /// by app, version and reason; a second termination of the same app and version joins it,
    /// one of another version is counted under that version.
    @Test func memoryTerminationGroupsByAppVersionAndReason() throws {
        let h = try Harness()
        let original = try String(contentsOfFile: Self.wild + "/kscrash/oom.json", encoding: .utf8)
        let again = original.replacingOccurrences(of: "A686D4F9-5708-4E24-ADF3-24216C15F0ED", with: "A686D4F9-5708-4E24-ADF3-24216C15F0EE")
        let paths = try h.write([Data(original.utf8), Data(again.utf8)])
        let master = try h.startMaster(["--workers", "1"])
        defer { master.signal(SIGTERM); _ = try? master.waitForExit() }
        let reports = try submitted(h, paths)
        for report in reports {
            #expect(report["kind"] as? String == "crash")
            #expect((report["threads"] as? [Any])?.isEmpty ?? true)
            #expect((report["app"] as? [String: Any])?["name"] as? String == "xctest")
            #expect((report["app"] as? [String: Any])?["version"] as? String == "15.4")
            #expect((report["exception"] as? [String: Any])?["type"] as? String == "memory_termination")
        }
        #expect(group(reports[0])["fingerprint"] as? String != nil, "\(reports[0])")
        #expect(group(reports[0])["fingerprint"] as? String == group(reports[1])["fingerprint"] as? String)
        #expect(group(reports[1])["count"] as? Int == 2)
        #expect(group(reports[1])["app"] as? String == "xctest")
        #expect((group(reports[1])["title"] as? String)?.contains("memory_termination") == true, "\(group(reports[1]))")
    }

    /// KSCrash's hang (the main thread of Example-Reports/Hang.json) is a lag report, grouped
    /// by the lag rule (docs/grouping.md) on the device's names.
    @Test func kscrashHangIsALagGroup() throws {
        let h = try Harness()
        let master = try h.startMaster(["--workers", "1"])
        defer { master.signal(SIGTERM); _ = try? master.waitForExit() }
        let report = try submitted(h, [Self.wild + "/kscrash/Hang-main-thread.json"])[0]
        #expect(report["kind"] as? String == "lag")
        #expect(group(report)["kind"] as? String == "lag", "\(group(report))")
        #expect((group(report)["title"] as? String)?.hasPrefix("Hang in ") == true, "\(group(report))")
        #expect(report["os"] as? String == "iOS 26.1 (25B78)")
    }

    /// Real Swift crashes' stderr: the runtime's message reaches the report and the group title,
    /// the app is the program compiled here, and two programs never share a group.
    @Test func swiftTrapMessagesLeadTheGroupTitle() throws {
        let h = try Harness()
        let program = SwiftCrashProgram.shared
        let inputs = try ["index", "unwrap", "abort"].map { try program.stderr($0, format: "text") } + [try program.stderr("index", format: "json")]
        let paths = try h.write(inputs)
        let master = try h.startMaster(["--workers", "2"])
        defer { master.signal(SIGTERM); _ = try? master.waitForExit() }
        let reports = try submitted(h, paths)
        let expected = [ledgerMessage("index"), ledgerMessage("unwrap"), "Aborted", ledgerMessage("index")]
        for (report, message) in zip(reports, expected) {
            #expect((report["exception"] as? [String: Any])?["message"] as? String == message)
            #expect((report["app"] as? [String: Any])?["name"] as? String == SwiftCrashProgram.name)
            #expect((group(report)["title"] as? String)?.contains(message) == true, "\(group(report))")
            #expect(group(report)["app"] as? String == SwiftCrashProgram.name)
        }
        #expect(Set(reports.prefix(3).map { group($0)["fingerprint"] as? String }).count == 3, "three different crashes")
    }

    func ledgerMessage(_ mode: String) -> String {
        ["index": "Fatal error: Index out of range", "unwrap": "Fatal error: Unexpectedly found nil while unwrapping an Optional value"][mode] ?? ""
    }
}
