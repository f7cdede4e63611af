import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// Images, threads and frames a KSCrash sample holds, counted straight from the JSON with
/// JSONSerialization (independent of the parser): `binary_images` plus the distinct `object_addr`
/// of frames none of them starts at, the threads of `crash` plus those of `recrash_report`, and
/// every backtrace entry.
func kscrashExpectedCounts(_ json: Data) throws -> (images: Int, threads: Int, frames: Int) {
    let root = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
    let crash = root["crash"] as? [String: Any] ?? [:]
    // Entries that are not objects (a report cut short by a recrash) are no threads.
    func threadsOf(_ crash: [String: Any]) -> [[String: Any]] {
        ((crash["crashed_thread"] as? [String: Any]).map { [$0] } ?? []) + ((crash["threads"] as? [Any])?.compactMap { $0 as? [String: Any] } ?? [])
    }
    let recrashReport = root["recrash_report"] as? [String: Any]
    let threads = threadsOf(crash) + threadsOf(recrashReport?["crash"] as? [String: Any] ?? [:])
    let frames = threads.flatMap { ($0["backtrace"] as? [String: Any])?["contents"] as? [[String: Any]] ?? [] }
    // The listed images, plus one per distinct `object_addr` of a frame that none of them starts at.
    let listed = ((root["binary_images"] ?? recrashReport?["binary_images"]) as? [Any] ?? []).compactMap { $0 as? [String: Any] }
    let listedBases = Set(listed.compactMap { ($0["image_addr"] as? NSNumber)?.uint64Value })
    let profileFrames = ((crash["error"] as? [String: Any])?["profile"] as? [String: Any])?["frames"] as? [[String: Any]] ?? []
    let frameBases = Set((frames + profileFrames).compactMap { ($0["object_addr"] as? NSNumber)?.uint64Value })
    let images = listed.count + frameBases.subtracting(listedBases).count
    return (images, threads.count, frames.count)
}

@Suite struct KSCrashFidelityTests {
    static let samples = [
        "CrashInHandler.json", "oom.json", "Hang-main-thread.json", "raw.json", "processed.json", "recrash-report.json",
        "fatal-error-simulator.json",
    ]

    @Test(arguments: samples)
    func countsMatchAnIndependentCount(_ name: String) throws {
        let data = try wildSample("kscrash/\(name)")
        #expect(FormatRegistry.standard.detect(data)?.id == "kscrash")
        let report = try FormatRegistry.standard.detectAndParse(data)
        let expected = try kscrashExpectedCounts(data)
        #expect(report.images.count == expected.images)
        #expect(report.threads.count == expected.threads)
        #expect(report.threads.reduce(0) { $0 + $1.frames.count } == expected.frames)
    }

    /// KSCrash's Example-Reports/CrashInHandler.json: a bad pointer on the main thread, then the
    /// crash handler itself crashed while writing the report.
    @Test func crashInHandlerKeepsTheRecrashAsItsOwnPart() throws {
        let report = try FormatRegistry.standard.detectAndParse(try wildSample("kscrash/CrashInHandler.json"))
        #expect(report.kind == .crash)
        #expect(report.app == AppInfo(name: "Crash-Tester", version: "1.0", build: "1.0"))
        #expect(report.arch?.name == "armv7")
        #expect(report.os == "iPhone OS 4.3.3 (8J2)")
        #expect(report.exception?.type == "EXC_BAD_ACCESS")
        #expect(report.exception?.signal == "SIGSEGV")
        #expect(report.exception?.faultAddress == Address(0xffff_ffff))

        // The report proper: thread 0 is the one crashed thread, with the device's names.
        let main = report.threads.filter { $0.part == nil }
        #expect(main.map(\.index) == Array(0...7))
        #expect(report.threads.filter(\.crashed).map(\.index) == [0])
        let top = try #require(main.first?.frames.first)
        #expect(top.address == Address(193_888))
        #expect(top.symbol == "-[Crasher dereferenceBadPointer]")
        #expect(top.symbolOffset == 24)  // 193888 − 193864; the Apple text twin prints "+ 24"
        #expect(main[0].frames.last?.symbol == "main")
        #expect(main[0].name == "apple.main-thread")

        // The handler's crash: a separate part, not merged into thread 7 of the report proper.
        let recrash = report.threads.filter { $0.part == KSCrashFormat.recrashPart }
        #expect(recrash.count == 1)
        #expect(recrash.first?.index == 7)
        #expect(recrash.first?.name == "KSCrash Exception Handler (Primary)")
        #expect(recrash.first?.frames.map(\.symbol) == [
            "__vfprintf", "vfprintf_l", "printf", "onCrash", "kscrw_i_callUserCrashHandler",
            "kscrashreport_writeStandardReport", "kscrash_i_onCrash", "ksmachexc_i_handleExceptions", "_pthread_start",
        ])
        #expect(recrash.first?.frames.first?.symbolOffset == 160)  // "__vfprintf + 160" in the text twin
        #expect(report.warnings.contains { $0.contains("handler crashed while reporting") && $0.contains("SIGBUS") })
    }

    /// KSCrash's Tests/KSCrashFiltersTests/Resources/oom.json: no images, no threads.
    @Test func memoryTerminationIsACrashWithNoStack() throws {
        let data = try wildSample("kscrash/oom.json")
        #expect(!String(decoding: data, as: UTF8.self).contains("binary_images"), "the sample has no images at all")
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.kind == .crash)
        #expect(report.threads.isEmpty && report.images.isEmpty)
        #expect(report.app == AppInfo(name: "xctest", version: "15.4", build: "22720"))
        #expect(report.os == "visionOS 1.1 (23E224)")
        #expect(report.arch?.name == "arm64e")
        #expect(report.exception?.type == "memory_termination")
        #expect(report.exception?.signal == "SIGKILL")
    }

    /// The first part of KSCrash's Example-Reports/Hang.json (the hung main thread; see SOURCES.md).
    @Test func hangIsALagReportSampledFromTheMainThread() throws {
        let report = try FormatRegistry.standard.detectAndParse(try wildSample("kscrash/Hang-main-thread.json"))
        #expect(report.kind == .lag)
        #expect(report.app == AppInfo(name: "CrashTest", version: "1.0", build: "1"))
        #expect(report.os == "iOS 26.1 (25B78)")
        #expect(report.arch?.name == "arm64e")
        #expect(report.exception?.type == "hang")
        let main = try #require(report.threads.first { $0.index == 0 })
        #expect(main.frames.count == 56)
        let lag = try #require(report.lag)
        #expect(lag.samples.map(\.frames) == [main.frames])
        #expect(main.frames[0].symbol == "__semwait_signal")
        #expect(main.frames[0].symbolOffset == 8)  // 4311924304 − 4311924296
        #expect(main.frames[3].symbol == "$s9CrashTest11ContentViewV4bodyQrvg7SwiftUI6ButtonVyAE4TextVGyXEfU_yyScMYccfU_")
        #expect(main.frames[54].symbol == nil, "a frame without symbol_name keeps none")
        // No binary_images: the frames' object_name/object_addr are the images.
        #expect(report.images.map(\.name) == ["libsystem_kernel.dylib", "libobjc.A.dylib", "CrashTest.debug.dylib", "DesktopServicesPriv"])
        #expect(main.frames[0].imageIndex == 0 && main.frames[3].imageIndex == 2)
        #expect(report.images[0].loadAddress == Address(4_311_908_352))
    }

    @Test func hangWithoutItsMainThreadIsRefusedByName() throws {
        let text = #"{"system": {"CFBundleExecutable": "App"}, "crash": {"error": {"type": "hang"}, "threads": []}}"#
        #expect(throws: ReportParseError.invalidReport(
            format: "kscrash", reason: "crash.threads: a hang report without the hung main thread's backtrace")) {
            try FormatRegistry.standard.detectAndParse(Data(text.utf8))
        }
    }

    /// The exception's text, in KSCrash's order: `reason`, the NSException's reason (its name
    /// is the type), then an image's `crash_info_message` (the Swift runtime's trap message,
    /// without the standard library's file and line).
    @Test func messagesComeFromReasonNSExceptionAndCrashInfo() throws {
        let original = String(decoding: try wildSample("kscrash/CrashInHandler.json"), as: UTF8.self)
        let errorStart = #""error": {"# + "\n" + #"            "address": 4294967295,"#
        #expect(original.contains(errorStart))
        let nsexception = original.replacingOccurrences(
            of: errorStart,
            with: #""error": {"nsexception": {"name": "NSRangeException", "reason": "*** -[__NSArrayI objectAtIndex:]: index 5 beyond bounds [0 .. 2]"},"#
                + "\n" + #"            "address": 4294967295,"#)
        let thrown = try KSCrashFormat().parse(Data(nsexception.utf8))
        #expect(thrown.exception?.type == "NSRangeException")
        #expect(thrown.exception?.message == "*** -[__NSArrayI objectAtIndex:]: index 5 beyond bounds [0 .. 2]")

        let appImage = #""name": "/var/mobile/Applications/B19FDF7E-768B-42D9-88E7-80F757E22883/Crash-Tester.app/Crash-Tester","#
        let crashInfo = original.replacingOccurrences(
            of: appImage, with: appImage + #" "crash_info_message": "Swift/ContiguousArrayBuffer.swift:600: Fatal error: Index out of range","#)
        #expect(try KSCrashFormat().parse(Data(crashInfo.utf8)).exception?.message == "Fatal error: Index out of range")

        let both = crashInfo.replacingOccurrences(of: errorStart, with: #""error": {"reason": "the reason wins","# + "\n" + #"            "address": 4294967295,"#)
        #expect(try KSCrashFormat().parse(Data(both.utf8)).exception?.message == "the reason wins")
    }

    /// A KSCrash 2.x profile report, shaped as KSCrash's migration guide documents it
    /// (docs: "Profile Reports"; values from that example): no binary_images, frames deduplicated
    /// with `object_uuid`, samples as indexes (deepest call first).
    static func profileReport(samples: String, threads: String? = nil) -> String {
        let frames = [
            (4_377_604_587, 4_377_604_536, "main", "MyApp", 4_377_493_504, "FDECDBB8-12EB-328F-80E7-2BCEA7D31540"),
            (4_377_604_700, 4_377_604_650, "$s5MyApp4loopyyF", "MyApp", 4_377_493_504, "FDECDBB8-12EB-328F-80E7-2BCEA7D31540"),
            (6_442_950_000, 6_442_949_900, "mach_msg2_trap", "libsystem_kernel.dylib", 6_442_909_696, "BB867BE3-83C2-3D97-84EF-4661B648229C"),
        ].map { #"{"instruction_addr": \#($0.0), "symbol_addr": \#($0.1), "symbol_name": "\#($0.2)", "object_name": "\#($0.3)", "object_addr": \#($0.4), "object_uuid": "\#($0.5)"}"# }
        return """
            {"report": {"monitor_id": "profile", "finalized": true, "type": "standard", "process_name": "MyApp"},
             "system": {"CFBundleExecutable": "MyApp", "CFBundleShortVersionString": "3.2", "CFBundleVersion": "77",
                        "system_name": "iOS", "system_version": "18.1", "os_version": "22B83", "cpu_arch": "arm64e"},
             "crash": {"error": {"type": "profile", "is_fatal": false, "profile": {
                "name": "my-session", "id": "CA579409-1D76-4C21-99FA-531FBA84CBF2", "duration": 480961958,
                "expected_sample_interval": 10000000, "time_units": "nanoseconds",
                "frames": [\(frames.joined(separator: ",\n"))],
                "samples": \(samples)\(threads.map { ", \"threads\": \($0)" } ?? "")}}}}
            """
    }

    @Test func profileIsALagReportWithItsSamples() throws {
        let data = Data(Self.profileReport(samples: #"[{"time_start_uptime": 654207616100583, "duration": 130958, "frames": [2, 1, 0]}, {"time_start_uptime": 654207626100583, "frames": [1, 0]}]"#).utf8)
        #expect(FormatRegistry.standard.detect(data)?.id == "kscrash")
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.kind == .lag)
        #expect(report.app == AppInfo(name: "MyApp", version: "3.2", build: "77"))
        #expect(report.os == "iOS 18.1 (22B83)")
        let samples = try #require(report.lag?.samples)
        #expect(samples.map { $0.frames.map(\.address.value) } == [[6_442_950_000, 4_377_604_700, 4_377_604_587], [4_377_604_700, 4_377_604_587]])
        #expect(samples[0].frames.map(\.symbol) == ["mach_msg2_trap", "$s5MyApp4loopyyF", "main"])
        #expect(samples[0].frames.map(\.symbolOffset) == [100, 50, 51])
        #expect(samples[0].frames.map(\.kind) == [.pc, .returnAddress, .returnAddress])
        // One image per object, with the frame's object_uuid as its id.
        #expect(report.images.map(\.name) == ["libsystem_kernel.dylib", "MyApp"])
        #expect(report.images.map { $0.id?.hex } == ["bb867be383c23d9784ef4661b648229c", "fdecdbb812eb328f80e72bcea7d31540"])
    }

    @Test func profileThreadsUseThePrimaryThreadWithCounts() throws {
        let threads = #"[{"index": 1, "primary": false, "samples": [{"count": 5, "frames": [2]}]}, {"index": 0, "primary": true, "name": "main", "samples": [{"count": 3, "frames": [1, 0]}, {"frames": [0]}]}]"#
        let report = try KSCrashFormat().parse(Data(Self.profileReport(samples: "[]", threads: threads).utf8))
        #expect(report.lag?.samples.map { $0.frames.count } == [2, 2, 2, 1])
    }

    @Test func aProfileIndexPastTheFramesIsAMalformedFrame() throws {
        let report = try KSCrashFormat().parse(Data(Self.profileReport(samples: #"[{"frames": [1, 9]}]"#).utf8))
        #expect(report.lag?.samples.first?.frames.map { $0.malformed ?? false } == [false, true])
        #expect(report.warnings.contains { $0.contains("index 9 names no entry of profile.frames") })
    }
}
