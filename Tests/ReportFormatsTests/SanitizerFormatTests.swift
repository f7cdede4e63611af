import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// Stacks and frames of a sanitizer report, counted by regular expressions over its text: a
/// frame is a `#N 0xHEX` line, a stack starts at each `#0`; an image is a distinct module of
/// `(module+0xOFF)` with its BuildId.
func sanitizerExpectedCounts(_ text: String) -> (images: Int, threads: Int, frames: Int) {
    func all(_ pattern: String) -> [[String]] {
        let regex = try! NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (0..<match.numberOfRanges).map { i in Range(match.range(at: i), in: text).map { String(text[$0]) } ?? "" }
        }
    }
    let frames = all(#"^\s*#\d+ 0x[0-9a-f]+ "#).count
    let modules = Set(all(#"^\s*#\d+ 0x[0-9a-f]+ .*\(([^ ()]+)\+0x[0-9a-f]+\)(?: \(BuildId: ([0-9a-f]+)\))?$"#).map { $0[1] + "|" + $0[2] })
    return (modules.count, all(#"^\s*#0 0x"#).count, frames)
}

@Suite struct SanitizerFormatTests {
    static let samples = ["clang-heap-use-after-free.txt", "gcc-heap-use-after-free.txt", "clang-symbolized.txt"]

    @Test(arguments: samples)
    func parsesAsTheReportSays(_ name: String) throws {
        let data = try wildSample("asan/" + name)
        let text = String(decoding: data, as: UTF8.self)
        #expect(FormatRegistry.standard.detect(data)?.id == "sanitizer")
        let report = try FormatRegistry.standard.detectAndParse(data)
        let error = try sanitizerErrorLine(text)
        #expect(report.exception == ExceptionInfo(type: error.type, faultAddress: Address(error.address), message: error.message))
        let expected = sanitizerExpectedCounts(text)
        #expect(report.images.count == expected.images)
        #expect(report.threads.count == expected.threads)
        #expect(report.threads.map(\.frames.count).reduce(0, +) == expected.frames)
        #expect(report.threads.map(\.crashed) == [true] + Array(repeating: false, count: report.threads.count - 1))
        #expect(report.threads.dropFirst().map(\.name) == ["freed by thread T0 here", "previously allocated by thread T0 here"])
        #expect(report.threads.dropFirst().allSatisfy { $0.part == "sanitizer" })
    }

    /// `(module+0xOFF)`: the offset is the frame's address in that module, with the BuildId.
    @Test func moduleOffsetsAreFileAddresses() throws {
        let report = try FormatRegistry.standard.detectAndParse(try wildSample("asan/clang-heap-use-after-free.txt"))
        let frame = try #require(report.threads.first?.frames.first)
        let image = report.images[try #require(frame.imageIndex)]
        #expect(image.name == "use-after-free")
        #expect(image.loadAddress == Address(0) && image.vmAddress == Address(0))
        #expect(image.id?.hex == "676ea63aa2e150204b0cf9389fbe295418c90e68")
        #expect(frame.address == Address(0x171ea4) && frame.kind == .pc)
        #expect(report.warnings.isEmpty, "\(report.warnings)")
    }

    /// GCC's runtime prints no BuildId: the images have no id, and a warning says why.
    @Test func noBuildIdIsAWarning() throws {
        let report = try FormatRegistry.standard.detectAndParse(try wildSample("asan/gcc-heap-use-after-free.txt"))
        #expect(report.images.allSatisfy { $0.id == nil })
        #expect(report.warnings.contains { $0.contains("BuildId") })
    }

    /// A frame the runtime symbolized keeps the function name it printed.
    @Test func deviceSymbolizedFramesKeepTheirNames() throws {
        let report = try FormatRegistry.standard.detectAndParse(try wildSample("asan/clang-symbolized.txt"))
        let frames = try #require(report.threads.first?.frames)
        #expect(frames.map(\.symbol) == ["read_freed", "main", "__libc_start_call_main", "__libc_start_main", "_start"])
        #expect(frames[0].imageIndex == nil && frames[0].address == Address(0x559fd65aaea4))
        #expect(frames[4].imageIndex != nil && frames[4].address == Address(0x7f710))
    }

    @Test func twoReportsInOneCaptureAreTwoParts() throws {
        let one = try wildSample("asan/clang-heap-use-after-free.txt")
        let two = one + (try wildSample("asan/gcc-heap-use-after-free.txt"))
        let parts = SanitizerReportFormat().split(two)
        #expect(parts == [one, try wildSample("asan/gcc-heap-use-after-free.txt")])
    }

    @Test func withoutAnErrorLineItIsRefused() {
        let text = "==1==ERROR: nothing\n    #0 0x1234  (/a.out+0x1234)\n"
        #expect(throws: ReportParseError.self) { try SanitizerReportFormat().parse(Data(text.utf8)) }
    }
}
