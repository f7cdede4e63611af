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
