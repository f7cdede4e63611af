import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// Issue 34 §3: three classes of real reports that failed in formats Stackline reads. Each test
/// takes its expected values from the sample's own text (read here by regular expressions or
/// `JSONSerialization`), never from Stackline's output.
@Suite struct RealWorldMissesTests {
    // MARK: ASan inside an Android tombstone

    static let asanTombstone = "android/tombstone-asan-heap-use-after-free.txt"

    /// Every match of `pattern` in `text`, as the capture groups' strings.
    func matches(_ pattern: String, in text: String) -> [[String]] {
        let regex = try! NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (0..<match.numberOfRanges).map { i in Range(match.range(at: i), in: text).map { String(text[$0]) } ?? "" }
        }
    }

    /// A tombstone whose abort message is an AddressSanitizer report (what `abort_on_error` does
    /// on Android): the report opens with its `=====` rule, so the ERROR line is the second.
    @Test func aTombstoneCarryingAnASanReportNamesTheError() throws {
        let data = try wildSample(Self.asanTombstone)
        let text = String(decoding: data, as: UTF8.self)
        #expect(FormatRegistry.standard.detect(data)?.id == "android-tombstone")
        let report = try FormatRegistry.standard.detectAndParse(data)

        let error = try #require(matches(#"==\d+==ERROR: (AddressSanitizer: ([a-z-]+) on address (0x[0-9a-f]+) .*)$"#, in: text).first)
        #expect(report.exception?.message == error[1])
        #expect(report.exception?.type == error[2])
        #expect(report.exception?.faultAddress == Address(parsing: error[3]))
        #expect(report.exception?.signal == "SIGABRT")
        #expect(report.app?.name == "com.jeffmony.audioplayer")

        // The tombstone's own backtrace is the crashed thread, with no part: its `#NN pc` lines.
        let tombstoneFrames = matches(#"#\d\d pc ([0-9a-f]+)  "#, in: text).map { UInt64($0[1], radix: 16)! }
        let crashed = try #require(report.threads.first { $0.crashed })
        #expect(crashed.part == nil)
        #expect(crashed.index == 20011 && crashed.name == "AudioTrack")
        #expect(crashed.frames.map(\.address.value) == tombstoneFrames)
        #expect(crashed.frames.first?.symbol == "abort" && crashed.frames.first?.symbolOffset == 164)

        // ASan's stacks are threads of part `sanitizer`, named by the line above each, at the
        // module offsets the report prints.
        let asan = report.threads.filter { $0.part == "sanitizer" }
        #expect(asan.map(\.name) == ["READ of size 1792 at 0x004ac1e41080 thread T32 (AudioTrack)", "freed by thread T32 (AudioTrack) here"])
        #expect(asan.allSatisfy { !$0.crashed })
        let offsets = matches(#"#(\d+) 0x[0-9a-f]+  \(([^()]+)\+0x([0-9a-f]+)\)"#, in: text)
        var stacks: [[(String, UInt64)]] = []
        for o in offsets {
            if o[1] == "0" { stacks.append([]) }
            stacks[stacks.count - 1].append((o[2], UInt64(o[3], radix: 16)!))
        }
        #expect(asan.map { $0.frames.map(\.address.value) } == stacks.map { $0.map(\.1) })
        #expect(asan.map { $0.frames.map { report.images[$0.imageIndex!].path } } == stacks.map { $0.map(\.0) })
        // The same library in both parts is one image: a tombstone pc and ASan's module+0x… are both file offsets.
        let ltp = try #require(report.images.firstIndex { $0.name == "libltpaudio.so" })
        #expect(crashed.frames[3].imageIndex == ltp && asan[0].frames[1].imageIndex == ltp)
    }

    /// ASan frames with `(BuildId: …)` and one the runtime symbolized (`in f file:line`), inside a
    /// tombstone's abort message. The first four lines are from a public capture (an osgEarth
    /// Android app's logcat, ASan on arm64); the symbolized frame is written in ASan's own form.
    @Test func asanFramesWithBuildIdsAndSourceLocationsInATombstone() throws {
        let lib = "/data/app/~~l82VxMShwt7_onUDFtOyWw==/com.oearth.androioearth01-YkGOTHy_l-DyLOwCqK9cLQ==/lib/arm64/libandroioearth01.so"
        let text = """
            pid: 24436, tid: 24696, name: GLThread 16  >>> com.oearth.androioearth01 <<<
            signal 6 (SIGABRT), code -1 (SI_QUEUE), fault addr --------
            Abort message: '=================================================================
            ==24436==ERROR: AddressSanitizer: heap-use-after-free on address 0x004b2aabf1c0 at pc 0x00724b3397a4 bp 0x0072537f9e50 sp 0x0072537f9e48
            READ of size 8 at 0x004b2aabf1c0 thread T20 (GLThread 16)
                #0 0x724b3397a0  (\(lib)+0x55da7a0) (BuildId: 73fdf18df610a01fcb4be7d97e5c3f31b1151556)
                #1 0x724b84835c  (\(lib)+0x5ae935c) (BuildId: 73fdf18df610a01fcb4be7d97e5c3f31b1151556)
                #2 0x7c3e83e5ea41 in asan_thread_start ../../../../src/libsanitizer/asan/asan_interceptors.cpp:234
            '

            backtrace:
                  #00 pc 000000000004e0ac  /apex/com.android.runtime/lib64/bionic/libc.so (abort+164)
            """
        let report = try FormatRegistry.standard.detectAndParse(Data(text.utf8))
        #expect(report.exception?.type == "heap-use-after-free")
        #expect(report.exception?.faultAddress == Address(0x4b2aabf1c0))
        let asan = try #require(report.threads.first { $0.part == "sanitizer" })
        #expect(asan.frames.map(\.address.value) == [0x55da7a0, 0x5ae935c, 0x7c3e83e5ea41])
        let image = report.images[try #require(asan.frames[0].imageIndex)]
        #expect(image.path == lib)
        #expect(image.id?.hex == "73fdf18df610a01fcb4be7d97e5c3f31b1151556")
        #expect(asan.frames[2].imageIndex == nil && asan.frames[2].symbol == "asan_thread_start")
        #expect(report.threads.first { $0.crashed }?.frames.map(\.symbol) == ["abort"])
    }

    /// `wrap.sh` prints the ASan report to logcat before debuggerd's tombstone; when the abort
    /// message is not the report, the logcat ERROR line still names the error.
    @Test func anASanReportInLogcatBeforeTheTombstoneNamesTheError() throws {
        let text = """
            2019-02-13 20:01:48.227 25077-25077/? I/wrap.sh: ==25083==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x00310002a790 at pc 0x0077f45e5b64 bp 0x007fc758a630 sp 0x007fc758a628
            2019-02-13 20:01:48.227 25077-25077/? I/wrap.sh: WRITE of size 4 at 0x00310002a790 thread T0 (com.panda.asam)
            2019-02-13 20:01:48.227 25077-25077/? I/wrap.sh:     #0 0x77f45e5b63  (/data/app/com.panda.asam-aa9WIA8AYlzCvuGKb0LoJQ==/lib/arm64/libnative-lib.so+0x1b63)
            2019-02-13 20:01:48.270 25188-25188/? A/DEBUG: *** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
            2019-02-13 20:01:48.270 25188-25188/? A/DEBUG: pid: 25083, tid: 25083, name: com.panda.asam  >>> com.panda.asam <<<
            2019-02-13 20:01:48.270 25188-25188/? A/DEBUG: signal 6 (SIGABRT), code -6 (SI_TKILL), fault addr --------
            2019-02-13 20:01:48.271 25188-25188/? A/DEBUG: backtrace:
            2019-02-13 20:01:48.271 25188-25188/? A/DEBUG:     #00 pc 0000000000021e68  /system/lib64/libc.so (abort+104)
            """
        let report = try FormatRegistry.standard.detectAndParse(Data(text.utf8))
        #expect(report.exception?.type == "heap-buffer-overflow")
        #expect(report.exception?.message?.hasPrefix("AddressSanitizer: heap-buffer-overflow on address 0x00310002a790") == true)
        #expect(report.threads.first { $0.part == "sanitizer" }?.frames.map(\.address.value) == [0x1b63])
        #expect(report.threads.first { $0.crashed }?.index == 25083)
    }

    // MARK: KSCrash recrash reports

    /// KSCrash's C writer (here SentryCrash's, the same code) after its handler crashed: the
    /// handler's minimal report at the top, the crash's own report, cut short, in
    /// `recrash_report`. Once refused ("threads[1]: expected an object").
    @Test func aRecrashWrittenByKSCrashsWriterShowsBothCrashes() throws {
        let data = try wildSample("kscrash/recrash-report.json")
        #expect(FormatRegistry.standard.detect(data)?.id == "kscrash")
        let report = try FormatRegistry.standard.detectAndParse(data)
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let original = try #require(root["recrash_report"] as? [String: Any])
        let error = try #require((original["crash"] as? [String: Any])?["error"] as? [String: Any])
        let handlerThread = try #require((root["crash"] as? [String: Any])?["crashed_thread"] as? [String: Any])

        // The exception is the crash's, not the handler's.
        #expect(report.exception?.type == (error["mach"] as? [String: Any])?["exception_name"] as? String)
        #expect(report.exception?.signal == (error["signal"] as? [String: Any])?["name"] as? String)
        #expect(report.exception?.faultAddress == Address((error["address"] as! NSNumber).uint64Value))
        let system = try #require(original["system"] as? [String: Any])
        #expect(report.app?.name == system["CFBundleExecutable"] as? String)
        #expect(report.app?.version == system["CFBundleShortVersionString"] as? String)
        #expect(report.os == "macOS 10.15.5 (19F101)")

        // The crash's thread first, without a part; then the handler's, marked `recrash`.
        let originalThread = try #require(((original["crash"] as? [String: Any])?["threads"] as? [Any])?.first as? [String: Any])
        func firstFrame(_ thread: [String: Any]) -> [String: Any] {
            ((thread["backtrace"] as? [String: Any])?["contents"] as? [[String: Any]])?.first ?? [:]
        }
        #expect(report.threads.map(\.part) == [nil, KSCrashFormat.recrashPart])
        let crash = report.threads[0], handler = report.threads[1]
        #expect(crash.frames.first?.address.value == (firstFrame(originalThread)["instruction_addr"] as? NSNumber)?.uint64Value)
        #expect(crash.frames.first?.symbol == firstFrame(originalThread)["symbol_name"] as? String)
        #expect(handler.index == handlerThread["index"] as? Int)
        #expect(handler.name == handlerThread["name"] as? String)
        #expect(!handler.crashed)
        #expect(handler.frames.first?.symbol == firstFrame(handlerThread)["symbol_name"] as? String)
        // The cut left one image listed; the frames in the others name theirs (`object_name`, `object_addr`).
        let listed = ((original["binary_images"] as? [[String: Any]]) ?? []).compactMap { ($0["name"] as? String).map { ($0 as NSString).lastPathComponent } }
        let named = [firstFrame(originalThread), firstFrame(handlerThread)].compactMap { $0["object_name"] as? String }
        #expect(report.images.map(\.name) == listed + named)
        #expect(crash.frames.first?.imageIndex.map { report.images[$0].loadAddress.value } == (firstFrame(originalThread)["object_addr"] as? NSNumber)?.uint64Value)
        // What the cut left behind is named, and so is the handler's crash.
        #expect(report.warnings.contains { $0.contains("recrash_report.crash.threads: 1 entries are not objects") }, "\(report.warnings)")
        #expect(report.warnings.contains { $0.contains("handler crashed while reporting (SIGSEGV)") }, "\(report.warnings)")
    }

    /// Without `report.type`, the handler's part is still the one with `crashed_thread` alone.
    @Test func theHandlersPartIsKnownByItsCrashedThreadAlone() throws {
        let text = String(decoding: try wildSample("kscrash/recrash-report.json"), as: UTF8.self)
        let untyped = text.replacingOccurrences(of: #""type": "minimal""#, with: #""kind": "minimal""#)
        #expect(untyped != text)
        let report = try KSCrashFormat().parse(Data(untyped.utf8))
        #expect(report.exception?.type == "EXC_BAD_ACCESS")
        #expect(report.threads.map(\.part) == [nil, KSCrashFormat.recrashPart])
    }

    /// KSCrash's writer puts `{"error": "Invalid JSON data: …", "json_data": PATH}` where the
    /// crash's report could not be copied (`addJSONErrorElement`): the handler's crash is shown.
    @Test func aRecrashWhoseCopyFailedShowsTheHandlersCrash() throws {
        let text = String(decoding: try wildSample("kscrash/recrash-report.json"), as: UTF8.self)
        let start = try #require(text.range(of: #""recrash_report": {"#))
        let end = try #require(text.range(of: "\n    },\n    \"report\": {"))
        let lost = text.replacingCharacters(
            in: start.lowerBound..<end.lowerBound,
            with: #""recrash_report": {"error": "Invalid JSON data: Incomplete data", "json_data": "/tmp/report.json.old""#)  // its "}" stays
        let report = try KSCrashFormat().parse(Data(lost.utf8))
        #expect(report.exception?.signal == "SIGSEGV")
        #expect(report.threads.map(\.name) == ["SentryCrash Exception Handler (Primary)"])
        #expect(report.threads.map(\.part) == [nil])
        #expect(report.warnings.contains { $0.contains("recrash_report holds no crash") }, "\(report.warnings)")
    }

    /// A list entry that is an object but not a thread is still an error, named by its path.
    @Test func aBrokenObjectInAListStillFailsByName() throws {
        let text = String(decoding: try wildSample("kscrash/recrash-report.json"), as: UTF8.self)
        let broken = text.replacingOccurrences(of: "\"exception\"\n            ]", with: "{\"index\": \"three\"}\n            ]")
        #expect(broken != text)
        #expect(throws: ReportParseError.self) { try KSCrashFormat().parse(Data(broken.utf8)) }
    }

    // MARK: The Swift runtime's crash-info message

    static let simulator = "kscrash/fatal-error-simulator.json"

    /// The message each image of the sample records, read with JSONSerialization.
    func crashInfo(_ data: Data) throws -> (swiftCore: String, others: [String]) {
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let images = try #require(root["binary_images"] as? [[String: Any]])
        var swiftCore: String?, others: [String] = []
        for image in images {
            for key in ["crash_info_message", "crash_info_message2"] {
                guard let message = image[key] as? String else { continue }
                if (image["name"] as? String)?.hasSuffix("/libswiftCore.dylib") == true { swiftCore = message } else { others.append(message) }
            }
        }
        return (try #require(swiftCore), others)
    }

    /// `Fatal error: Hello fatal` from `iOS_Swift/ViewController.swift:53: Fatal error: Hello fatal\n`:
    /// the text from the runtime's word on, as the file states it, without the line break.
    func expectedTitle(_ swiftCore: String) throws -> String {
        let range = try #require(swiftCore.range(of: "Fatal error: "))
        return String(swiftCore[range.lowerBound...]).trimmingCharacters(in: .newlines)
    }

    /// libswiftCore's message leads, the simulator's annotation follows as a note; in the
    /// sample's order, with the simulator's image listed first, and with libswiftCore's text in
    /// `crash_info_message2` (as sentry-cocoa's message2 sample has it).
    @Test(arguments: ["as written", "simulator first", "message2"])
    func libswiftCoresMessageLeads(_ variant: String) throws {
        var text = String(decoding: try wildSample(Self.simulator), as: UTF8.self)
        switch variant {
        case "simulator first":
            // Swap the two images' messages between the images, so the simulator's comes first in the file.
            let root = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            var images = try #require(root["binary_images"] as? [[String: Any]])
            images.swapAt(1, 2)
            var reordered = root
            reordered["binary_images"] = images
            text = String(decoding: try JSONSerialization.data(withJSONObject: reordered), as: UTF8.self)
        case "message2":
            let swiftCoreKey = #""crash_info_message": "iOS_Swift/"#
            #expect(text.contains(swiftCoreKey))
            text = text.replacingOccurrences(of: swiftCoreKey, with: #""crash_info_message2": "iOS_Swift/"#)
        default: break
        }
        let data = Data(text.utf8)
        let (swiftCore, others) = try crashInfo(data)
        let report = try FormatRegistry.standard.detectAndParse(data)
        let lines = report.exception?.message?.components(separatedBy: "\n") ?? []
        #expect(lines.first == (try expectedTitle(swiftCore)), "\(variant)")
        #expect(Array(lines.dropFirst()) == others, "\(variant)")
        #expect(others.count == 1 && others[0].hasPrefix("CoreSimulator "))
    }

    /// An NSException's reason (or `crash.error.reason`) still comes before any image's message.
    @Test func theErrorsOwnReasonStillWins() throws {
        let text = String(decoding: try wildSample(Self.simulator), as: UTF8.self)
        let withReason = text.replacingOccurrences(of: #""type": "mach""#, with: #""type": "mach", "reason": "the reason wins""#)
        #expect(withReason != text)
        #expect(try KSCrashFormat().parse(Data(withReason.utf8)).exception?.message == "the reason wins")
    }
}
