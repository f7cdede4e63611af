import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// Images, threads and frames of a tombstone or ndk-stack input, counted by regular expressions
/// over its text (an oracle independent of the parser): a frame is a `#NN pc HEX` line or a
/// sanitizer `#N 0xHEX (module+0xOFF)` line; an image is a distinct mapping path and BuildId
/// among them; a thread is each `pid: N, tid: N` heading (one if there is none) plus each
/// sanitizer stack (`#0 0x` line).
func tombstoneExpectedCounts(_ text: String) -> (images: Int, threads: Int, frames: Int) {
    func all(_ pattern: String) -> [[String]] {
        let regex = try! NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (0..<match.numberOfRanges).map { i in Range(match.range(at: i), in: text).map { String(text[$0]) } ?? "" }
        }
    }
    let pcFrames = all(#"#\d+ +pc +(?:0x)?[0-9a-f]+ +([^ (\n]*)[^\n]*?(?:\(BuildId: ([0-9a-f]+)\))?$"#)
    let sanitizerFrames = all(#"#\d+ 0x[0-9a-f]+ +.*\(([^ ()]+)\+0x[0-9a-f]+\)(?: \(BuildId: ([0-9a-f]+)\))?$"#)
    let images = Set((pcFrames + sanitizerFrames).map { $0[1] + "|" + $0[2] })
    let headings = all(#"pid: \d+, tid: \d+, name: "#).count
    let sanitizerStacks = all(#"^\s*#0 0x[0-9a-f]+ "#).count
    return (images.count, max(headings, 1) + sanitizerStacks, pcFrames.count + sanitizerFrames.count)
}

func androidSample(_ name: String) throws -> String {
    String(decoding: try wildSample("android/" + name), as: UTF8.self)
}

@Suite struct AndroidFidelityTests {
    static let samples = ["ndk-stack-backtrace.txt", "ndk-stack-multiple.txt", "ndk-stack-hwasan.txt", "tombstone-asan-heap-use-after-free.txt"]

    /// Each crash of each sample, parsed, against the regex count of its own text.
    @Test(arguments: samples)
    func countsMatchAnIndependentCount(_ name: String) throws {
        let data = try wildSample("android/" + name)
        #expect(FormatRegistry.standard.detect(data)?.id == "android-tombstone")
        let parts = try FormatRegistry.standard.detectAndParseAll(data)
        for part in parts {
            let report = try part.outcome.get()
            let expected = tombstoneExpectedCounts(String(decoding: part.data, as: UTF8.self))
            #expect(report.images.count == expected.images, "\(name) images")
            #expect(report.threads.count == expected.threads, "\(name) threads")
            #expect(report.threads.map(\.frames.count).reduce(0, +) == expected.frames, "\(name) frames")
        }
    }

    /// ndk-stack's two-crash capture: one report per crash, each with its own header.
    @Test func twoTombstonesInOneFileAreTwoReports() throws {
        let data = try wildSample("android/ndk-stack-multiple.txt")
        let pieces = AndroidTombstoneFormat().split(data)
        #expect(pieces.count == 2)
        #expect(pieces.map(\.count).reduce(0, +) == data.count, "the parts cover the input exactly")
        let parts = try FormatRegistry.standard.detectAndParseAll(data)
        let first = try #require(parts.first).outcome.get()
        let second = try #require(parts.last).outcome.get()

        // From the sample's first crash.
        #expect(first.app?.name == "bionic-unit-tests")
        #expect(first.arch == "arm64")
        #expect(first.os == "Android/aosp_taimen/taimen:R/QT/eng.cferri.20191008.133647:userdebug/test-keys")
        #expect(first.timestamp == "2019-10-10 21:15:11+0000")
        #expect(first.exception == ExceptionInfo(signal: "SIGABRT", code: "SI_QUEUE", message: "FORTIFY: strlcat: prevented 5-byte write into 4-byte buffer"))
        #expect(first.threads.map(\.index) == [11305])
        #expect(first.threads.map(\.crashed) == [true])
        let abort = try #require(first.threads.first?.frames.first)
        #expect(abort.symbol == "abort" && abort.symbolOffset == 172)
        #expect(abort.address == Address(0x7f3ec))
        #expect(first.images.map(\.id?.hex) == ["d0080326fbef53980488aedd32b02f5d"])

        // From the second.
        #expect(second.app?.name == "bionic-unit-tests")
        #expect(second.arch == "arm")
        #expect(second.timestamp == "2019-10-14 21:10:05+0000")
        #expect(second.exception == ExceptionInfo(signal: "SIGSEGV", code: "SEGV_MAPERR", faultAddress: Address(0x4)))
        #expect(second.threads.map(\.index) == [12664])
        let sem = try #require(second.threads.first?.frames.first)
        #expect(sem.symbol == "__sem_timedwait(sem_t*, timespec const*, bool)" && sem.symbolOffset == 68)
        #expect(second.images.map(\.path) == ["/system/lib/bootstrap/libc.so"])
    }

    /// ndk-stack's frames-only input: no `pid:` line, no `backtrace:` line; accepted with warnings.
    @Test func anExcerptWithoutHeadingsIsReadAsNdkStackReadsIt() throws {
        let data = try wildSample("android/ndk-stack-backtrace.txt")
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.warnings.contains { $0.contains("no \"pid: …, tid: …\" line") })
        #expect(report.warnings.contains { $0.contains("no \"backtrace:\" line") })
        #expect(report.app == nil && report.arch == nil && report.exception == nil)
        let frames = try #require(report.threads.first).frames
        #expect(report.threads.first?.crashed == true)
        #expect(frames.count == 20)
        #expect(frames.map(\.address.value).prefix(3) == [0x8534, 0x8534, 0x586f8])
        #expect(frames[15].symbol == nil)
        #expect(frames[16].symbol == "pthread_atfork" && frames[16].symbolOffset == nil)
        #expect(report.images[frames[1].imageIndex!].name == "libbase.so")
        #expect(report.images[frames[19].imageIndex!].name == "libc.so")
        #expect(report.images[frames[17].imageIndex!].id?.hex == "d27702f536e83ae9735c8cae5bedfe59")
        // `bad012345` is not a build-id: the image is kept without one, with a warning.
        #expect(report.images[frames[18].imageIndex!].id == nil)
        #expect(report.warnings.contains { $0.contains("bad012345") })
    }

    /// An HWASan report in the abort message: its first line is the exception, its stacks are threads.
    @Test func anHWASanAbortMessageNamesTheError() throws {
        let report = try FormatRegistry.standard.detectAndParse(try wildSample("android/ndk-stack-hwasan.txt"))
        #expect(report.app?.name == "com.example.hellohwasan")
        #expect(report.arch == "arm64")
        #expect(report.exception?.type == "tag-mismatch")
        #expect(report.exception?.signal == "SIGABRT")
        #expect(report.exception?.message == "HWAddressSanitizer: tag-mismatch on address 0x0042a0807af0 at pc 0x007b23b8786c")
        #expect(report.exception?.faultAddress == Address(0x42a0807af0))
        #expect(report.threads.map(\.crashed) == [true, false, false])
        #expect(report.threads[0].frames.first?.symbol == "abort")
        #expect(report.threads[1].part == "sanitizer")
        #expect(report.threads[1].name == "WRITE of size 1 at 0x0042a0807af0 tags: db/19 (ptr/mem) in thread T0")
        #expect(report.threads[1].frames.map(\.address.value) == [0x7b138, 0x198ccc])
        #expect(report.threads[2].name == "allocated here")
        #expect(report.images[report.threads[1].frames[1].imageIndex!].name == "libart.so")
    }

    /// Every logcat prefix style in front of every line of a real capture parses like the bare text.
    @Test(arguments: [
        "F/DEBUG   ( 1234): ",  // brief
        "F/DEBUG: ",  // tag
        "03-12 12:20:39.345 F/DEBUG( 1234): ",  // time
        "03-12 12:20:39.345  1234  1234 F DEBUG   : ",  // threadtime
        "2023-03-12 12:20:39.345  1234  1234 F DEBUG   : ",  // threadtime with -v year
        "03-12 12:20:39.345  1000  1234  1234 F DEBUG   : ",  // threadtime with -v uid
        "03-12 12:20:39.345  F  [30472/30472] DEBUG    ",  // Android Studio
        "2023-03-12 12:20:39.345 30472-30472/com.example A/DEBUG: ",  // Android Studio before Flamingo
        "2023-03-12 12:20:39.345 30472-30472/? A/DEBUG: ",
        "2023-03-12 12:20:39.345 30472-30472 DEBUG                   pid-30472                            A  ",  // Flamingo and later
    ])
    func everyLogcatPrefixIsStripped(_ prefix: String) throws {
        let bare = try androidSample("ndk-stack-multiple.txt")
        let prefixed = bare.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { prefix + $0 }.joined(separator: "\n") + "\n"
        let expected = try FormatRegistry.standard.detectAndParseAll(Data(bare.utf8)).map { try $0.outcome.get() }
        let parts = try FormatRegistry.standard.detectAndParseAll(Data(prefixed.utf8))
        #expect(parts.count == 2)
        for (part, reference) in zip(parts, expected) {
            var report = try part.outcome.get()
            report.warnings = reference.warnings
            #expect(report == reference)
        }
    }

    /// A multi-line abort message (a `CHECK` failure whose text ends with a newline) closes at
    /// the line ending in a quote; `Cmdline:` names the app even when `>>> <<<` differs.
    @Test func multiLineAbortMessageAndCmdline() throws {
        let text = """
            *** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
            Build fingerprint: 'google/sdk_gphone64_arm64/emu64a:14/UE1A.230829.050/12077443:userdebug/dev-keys'
            ABI: 'x86_64'
            Cmdline: /system/bin/app_process64 --zygote
            pid: 1054, tid: 1151, name: stack_manager  >>> zygote64 <<<
            signal 6 (SIGABRT), code -6 (SI_TKILL), fault addr --------
            Abort message: '[FATAL:alarm.cc(178)] Check failed: false.
            '
                rax 0000000000000000  rbx 000000000000047f

            backtrace:
                  #00 pc 000000000001db94  /system/lib64/libc.so (abort+104) (BuildId: 0123456789abcdef0123456789abcdef)
                  #01 pc 0000000000083438  /memfd:jit-cache (deleted) (offset 0x2000000)
                  #02 pc 0x000000000009aefc  /system/lib64/libchrome.so (_ZN7logging10LogMessageD2Ev+1072)
            """
        let report = try AndroidTombstoneFormat().parse(Data(text.utf8))
        #expect(report.exception?.message == "[FATAL:alarm.cc(178)] Check failed: false.")
        #expect(report.app?.name == "app_process64")
        #expect(report.arch == "x86_64")
        let frames = try #require(report.threads.first?.frames)
        #expect(frames.map(\.symbol) == ["abort", nil, "_ZN7logging10LogMessageD2Ev"])
        #expect(frames.map(\.symbolOffset) == [104, nil, 1072])
        #expect(frames[2].address == Address(0x9aefc), "ndk-stack accepts a 0x before the pc")
        #expect(report.images[frames[1].imageIndex!].path == "/memfd:jit-cache (deleted)")
        #expect(report.warnings.isEmpty, "\(report.warnings)")
    }
}
