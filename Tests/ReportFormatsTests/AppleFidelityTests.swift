import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// The same report with CRLF line endings, a UTF-8 byte-order mark, or blank lines before it.
enum EncodingVariant: String, CaseIterable, CustomStringConvertible {
    case crlf, bom, blankFirstLine, bomAndCRLF
    var description: String { rawValue }

    func apply(_ data: Data) -> Data {
        switch self {
        case .crlf: Self.crlf(data)
        case .bom: Data([0xef, 0xbb, 0xbf]) + data
        case .blankFirstLine: Data("\n  \r\n".utf8) + data
        case .bomAndCRLF: Data([0xef, 0xbb, 0xbf]) + Self.crlf(data)
        }
    }

    static func crlf(_ data: Data) -> Data {
        var out = Data(capacity: data.count + data.count / 20)
        for byte in data {
            if byte == 0x0a { out.append(0x0d) }
            out.append(byte)
        }
        return out
    }
}

/// Samples in every text and JSON format: the real ones under Tests/Fixtures/wild, and a
/// tombstone and an SDK lag report written here (their parsers' own tests hold the real ones).
func encodingSamples() throws -> [(String, Data)] {
    var samples: [(String, Data)] = []
    for path in ["apple-crash/handcrafted.txt", "apple-crash/XCDYouTubeKit-54.txt", "ips/multithread-test.ips", "kscrash/raw.json"] {
        samples.append((path, try wildSample(path)))
    }
    samples.append(("tombstone", Data("""
        *** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
        ABI: 'arm64'
        pid: 4242, tid: 4250, name: RenderThread  >>> com.example.app <<<
        signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000000000000010
        backtrace:
              #00 pc 000000000001a2b4  /data/app/lib/arm64/libnative.so (crash_here+20) (BuildId: 5a1b2c3d4e5f60718293a4b5c6d7e8f901234567)
              #01 pc 000000000001a300  /data/app/lib/arm64/libnative.so (BuildId: 5a1b2c3d4e5f60718293a4b5c6d7e8f901234567)

        """.utf8)))
    samples.append(("sdk-lag", Data("""
        {"type": "lag", "app": {"name": "Demo"},
         "dyld_images": [{"name": "/App/Demo", "uuid": "8F528C10-3E80-3DD6-B0BE-5D558F64F7AB", "base_addr": "0x104d00000"}],
         "samples": [["0x104d0824f", "0x104d08100"]]}
        """.utf8)))
    return samples
}

@Suite struct EncodingTests {
    /// Each variant parses to exactly what the plain file parses to, in every format.
    @Test(arguments: EncodingVariant.allCases)
    func everyFormatReadsTheVariantAsThePlainFile(_ variant: EncodingVariant) throws {
        for (name, plain) in try encodingSamples() {
            let expected = try FormatRegistry.standard.detectAndParse(plain)
            let data = variant.apply(plain)
            #expect(FormatRegistry.standard.detect(data)?.id == expected.format, "\(name)")
            // Blank lines in front move the line numbers that warnings quote, and nothing else.
            func comparable(_ report: RawReport) -> RawReport {
                var report = report
                if variant == .blankFirstLine { report.warnings = report.warnings.map { $0.hasPrefix("line ") ? "line" : $0 } }
                return report
            }
            let parsed = try FormatRegistry.standard.detectAndParse(data)
            #expect(comparable(parsed) == comparable(expected), "\(name) with \(variant)")
            // What submit and the worker take: the stored bytes parse by their format id.
            let parts = try FormatRegistry.standard.detectAndParseAll(data)
            #expect(parts.count == 1)
            let stored = try FormatRegistry.standard.parse(parts[0].data, format: parts[0].format)
            #expect(comparable(stored) == comparable(expected), "\(name) stored")
        }
    }

    @Test func aBadByteAfterABOMIsCountedFromTheFilesStart() throws {
        // "{" at 3, the bad byte at 11 in the file as sent.
        let data = Data([0xef, 0xbb, 0xbf]) + Data(#"{"a": "x"#.utf8) + Data([0xff]) + Data(#""}"#.utf8)
        #expect(throws: ReportParseError.invalidUTF8(offset: 11)) { try FormatRegistry.standard.detectAndParse(data) }
    }
}

// MARK: - Independent counts

/// Images, threads and frames an Apple `.crash` text holds, counted by regular expressions over
/// the text: image lines after `Binary Images:`, `Thread N:` / `Thread N Crashed:` headings plus
/// `Last Exception Backtrace:`, and numbered lines that carry a `0x…` address.
func appleCrashExpectedCounts(_ text: String) -> (images: Int, threads: Int, frames: Int) {
    func count(_ pattern: String, in text: Substring) -> Int {
        let regex = try! NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        let string = String(text)
        return regex.numberOfMatches(in: string, range: NSRange(string.startIndex..., in: string))
    }
    let all = Substring(text)
    let imagesPart = text.range(of: "Binary Images:").map { text[$0.upperBound...] } ?? ""
    let images = count(#"^\s*0x[0-9a-fA-F]+\s*-\s*0x[0-9a-fA-F]+\s"#, in: imagesPart)
    let threads = count(#"^Thread \d+( Crashed)?::?(\s|$)"#, in: all) + count(#"^Last Exception Backtrace:"#, in: all)
    // Frame lines anywhere: KSCrash's text puts its "Handler crashed while reporting:" threads
    // after the images. Image lines start `0x…` or blanks, so the pattern never takes one.
    let frames = count(#"^\d+\s+\S.*?\s0x[0-9a-fA-F]+(\s|$)"#, in: all)
    return (images, threads, frames)
}

/// The same for an `.ips`: the body's `usedImages`, `threads` (plus a non-empty
/// `lastExceptionBacktrace`) and their frames, read with JSONSerialization.
func ipsExpectedCounts(_ data: Data) throws -> (images: Int, threads: Int, frames: Int) {
    let text = String(decoding: data, as: UTF8.self)
    let body = try #require(text.firstIndex(of: "\n").map { text[text.index(after: $0)...] })
    let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
    let threads = json["threads"] as? [[String: Any]] ?? []
    let leb = json["lastExceptionBacktrace"] as? [Any] ?? []
    let frames = threads.reduce(0) { $0 + (($1["frames"] as? [Any])?.count ?? 0) } + leb.count
    return ((json["usedImages"] as? [Any])?.count ?? 0, threads.count + (leb.isEmpty ? 0 : 1), frames)
}

/// Every real `.crash` and `.ips` sample, with its count from the text and from the parser.
@Suite struct AppleSampleCountTests {
    static let crashSamples = ["apple-crash/handcrafted.txt", "apple-crash/spaces.txt", "apple-crash/XCDYouTubeKit-54.txt", "apple-crash/multithread-test.crash"]
    static let ipsSamples = ["ips/multithread-test.ips", "ips/asi.ips"]

    @Test(arguments: crashSamples)
    func crashCountsMatchTheText(_ path: String) throws {
        let data = try wildSample(path)
        let expected = appleCrashExpectedCounts(String(decoding: data, as: UTF8.self))
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.images.count == expected.images, "\(path)")
        #expect(report.threads.count == expected.threads, "\(path)")
        #expect(report.threads.reduce(0) { $0 + $1.frames.count } == expected.frames, "\(path)")
    }

    @Test(arguments: ipsSamples)
    func ipsCountsMatchTheJSON(_ path: String) throws {
        let data = try wildSample(path)
        let expected = try ipsExpectedCounts(data)
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.images.count == expected.images, "\(path)")
        #expect(report.threads.count == expected.threads, "\(path)")
        #expect(report.threads.reduce(0) { $0 + $1.frames.count } == expected.frames, "\(path)")
    }
}

// MARK: - What each sample says, and that Stackline keeps it

@Suite struct AppleFidelityTests {
    /// The device's names, the message, app, arch and OS of lldb's multithread-test crash, in both
    /// forms; the values are written as the files print them.
    @Test func multithreadTestCrashAndIPSKeepWhatTheDeviceKnew() throws {
        let crash = try FormatRegistry.standard.detectAndParse(try wildSample("apple-crash/multithread-test.crash"))
        let ips = try FormatRegistry.standard.detectAndParse(try wildSample("ips/multithread-test.ips"))
        #expect(crash.format == "apple-crash")
        #expect(ips.format == "apple-ips")
        for report in [crash, ips] {
            // "Process: multithread-test [22511]" / "procName" : "multithread-test"
            #expect(report.app?.name == "multithread-test", "\(report.format)")
            // "Code Type: ARM-64 (Native)" / "cpuType" : "ARM-64", while most images are arm64e.
            #expect(report.arch?.cpu == .arm64, "\(report.format)")
            #expect(report.os == "macOS 13.0 ()", "\(report.format)")
            #expect(report.platform == "macOS")
            // "Termination Reason: Namespace SIGNAL, Code 11 Segmentation fault: 11"
            #expect(report.exception?.message == "Namespace SIGNAL, Code 11 Segmentation fault: 11", "\(report.format)")
            #expect(report.exception?.signal == "SIGSEGV")
            let main = try #require(report.threads.first { $0.index == 0 })
            #expect(main.name == "com.apple.main-thread")
            // "0   libsystem_kernel.dylib  0x19cc40b84 __ulock_wait + 8"
            #expect(main.frames[0].symbol == "__ulock_wait" && main.frames[0].symbolOffset == 8, "\(report.format)")
            // "3   multithread-test  0x100ec5b3c main + 160 (multithread-test.cpp:31)"
            #expect(main.frames[3].symbol == "main" && main.frames[3].symbolOffset == 160, "\(report.format)")
            let crashed = try #require(report.threads.first { $0.crashed })
            #expect(crashed.index == 2)
            #expect(crashed.frames[0].symbol == "bar(int)" && crashed.frames[0].symbolOffset == 20)
        }
        // Cross-format: the same frames, the same names.
        #expect(crash.threads.map(\.index) == ips.threads.map(\.index))
        for (a, b) in zip(crash.threads, ips.threads) {
            #expect(a.frames.map(\.address) == b.frames.map(\.address), "thread \(a.index)")
            #expect(a.frames.map(\.symbol) == b.frames.map(\.symbol), "thread \(a.index)")
            #expect(a.frames.map(\.symbolOffset) == b.frames.map(\.symbolOffset), "thread \(a.index)")
            #expect(a.crashed == b.crashed)
        }
    }

    /// lldb's asi.ips: `asi` lines become the message, the most telling first.
    @Test func asiBecomesTheMessage() throws {
        let report = try FormatRegistry.standard.detectAndParse(try wildSample("ips/asi.ips"))
        #expect(report.exception?.message == """
            *** Terminating app due to uncaught exception 'NSRangeException', reason: '*** __boundsFail: index 10 beyond bounds [0 .. 3]'
            terminating with uncaught exception of type NSException
            abort() called
            """)
        #expect(report.app?.name == "asi")
        #expect(report.arch?.cpu == .arm64)
        let top = try #require(report.threads.first { $0.crashed }?.frames)
        // {"imageOffset":37412,"symbol":"__pthread_kill","symbolLocation":8,"imageIndex":0}
        #expect(top[0].symbol == "__pthread_kill" && top[0].symbolOffset == 8)
        #expect(top[13].symbol == "main" && top[13].symbolOffset == 128)
        #expect(top[12].symbol == "-[__NSArrayI objectAtIndex:]")
    }

    /// The `.crash` spellings of a device symbol, and the forms that are not one.
    @Test func crashFrameSymbolForms() throws {
        let text = """
            Incident Identifier: 1
            Process:             Demo [42]
            Path:                /private/var/containers/Bundle/Application/X/Demo.app/Demo
            Version:             2.1 (77)
            Code Type:           ARM-64 (Native)
            OS Version:          iPhone OS 16.0 (20A362)
            Exception Type:  EXC_CRASH (SIGABRT)
            Triggered by Thread:  0

            Application Specific Information:
            Demo/Ledger.swift:12: Fatal error: Index out of range

            Thread 0 Crashed:
            0   JavaScriptCore                	0x0000000180001000 JSValueIsString + 155
            1   JavaScriptCore                	0x0000000180001100 0x180000000 + 4352
            2   Demo                          	0x0000000100004000 Ledger.entry(at:) (in Demo) + 12 (Ledger.swift:12)
            3   Demo                          	0x0000000100004100 main (main.swift:5)
            4   libsystem_kernel.dylib        	0x0000000180003000 <redacted> + 8

            Binary Images:
            0x100000000 - 0x100007fff Demo arm64  <00112233445566778899aabbccddeeff> /private/var/containers/Bundle/Application/X/Demo.app/Demo
            0x180000000 - 0x180003fff JavaScriptCore arm64e  <00112233445566778899aabbccddeef0> /System/Library/Frameworks/JavaScriptCore.framework/JavaScriptCore
            """
        let report = try AppleCrashTextFormat().parse(Data(text.utf8))
        let frames = try #require(report.threads.first?.frames)
        #expect(frames.map(\.symbol) == ["JSValueIsString", nil, "Ledger.entry(at:)", "main", nil])
        #expect(frames.map(\.symbolOffset) == [155, nil, 12, nil, nil])
        #expect(report.exception?.message == "Demo/Ledger.swift:12: Fatal error: Index out of range")
        #expect(report.app == AppInfo(name: "Demo", version: "2.1", build: "77"))
        #expect(report.arch == Arch(.arm64))
        #expect(report.os == "iPhone OS 16.0 (20A362)")
        #expect(report.platform == "iOS")
    }

    /// Old-style `.ips`: the lldb multithread-test `.crash` text under a JSON header line, as iOS
    /// ≤ 14 (bug_type 109) and Xcode's Devices window (309) write it.
    @Test(arguments: ["109", "309"])
    func oldStyleIPSParsesLikeItsText(_ bugType: String) throws {
        let text = try wildSample("apple-crash/multithread-test.crash")
        let header = #"{"app_name":"multithread-test","timestamp":"2022-07-28 11:10:19.00 -0700","app_version":"","bug_type":"\#(bugType)","os_version":"macOS 13.0","name":"multithread-test"}"#
        // A "{" in the text body must not make it look like a JSON body.
        let data = Data((header + "\n").utf8) + text + Data("Extra: {not json}\n".utf8)
        #expect(FormatRegistry.standard.detect(data)?.id == "apple-ips-legacy")
        let legacy = try FormatRegistry.standard.detectAndParse(data)
        var plain = try FormatRegistry.standard.detectAndParse(text)
        plain.format = "apple-ips-legacy"
        #expect(legacy.threads == plain.threads)
        #expect(legacy.images == plain.images)
        #expect(legacy.exception == plain.exception)
        #expect(legacy.app == plain.app)
        #expect(legacy.os == plain.os)

        let other = Data(#"{"bug_type":"288","name":"x"}"#.utf8) + Data("\n".utf8) + text
        #expect(throws: ReportParseError.invalidReport(format: "apple-ips-legacy", reason: "bug_type 288 is not a crash report (109 or 309)")) {
            try FormatRegistry.standard.detectAndParse(other)
        }
    }

    /// The header of a real report, cut before its threads, is refused by name.
    @Test func headerOnlyCrashIsRefusedByName() throws {
        let text = String(decoding: try wildSample("apple-crash/multithread-test.crash"), as: UTF8.self)
        let header = String(text[..<text.range(of: "Thread 0::")!.lowerBound])
        do {
            _ = try FormatRegistry.standard.detectAndParse(Data(header.utf8))
            Issue.record("a header-only report parsed")
        } catch {
            #expect(error.description.contains("Apple crash report with no threads"), "\(error)")
        }
    }
}

/// KSCrash's Apple-style text: names after `0xBASE + OFFSET`, and the handler's own crash as a part.
@Suite struct KSCrashTextTwinTests {
    @Test func namesAfterTheOffsetAndTheRecrashPart() throws {
        let report = try FormatRegistry.standard.detectAndParse(try wildSample("kscrash/CrashInHandler.txt"))
        // Line 21 of the file: "0   Crash-Tester   0x0002f560 0x28000 + 30048 (-[Crasher dereferenceBadPointer] + 24)".
        let top = try #require(report.threads.first { $0.crashed }?.frames.first)
        #expect(top.symbol == "-[Crasher dereferenceBadPointer]")
        #expect(top.symbolOffset == 24)
        #expect(report.threads.filter(\.crashed).map(\.index) == [0], "the handler's crash never takes over")
        let recrash = report.threads.filter { $0.part == "recrash" }
        #expect(recrash.map(\.index) == [7])
        #expect(recrash.first?.frames.first?.symbol == "__vfprintf")
    }
}
