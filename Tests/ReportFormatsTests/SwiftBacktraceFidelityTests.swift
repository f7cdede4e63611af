import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// What the Swift runtime prints for each way `Tests/Fixtures/swift-backtrace/Ledger.swift`
/// crashes: the standard library's own words for the trap its source performs (an index past
/// `entries`, `owner!` on nil, `abort()`), which the backtracer's description names "Aborted".
let ledgerMessages = [
    "index": "Fatal error: Index out of range",
    "unwrap": "Fatal error: Unexpectedly found nil while unwrapping an Optional value",
    "abort": "Aborted",
    "noisy": "Fatal error: Index out of range",
]

/// Threads and frames of a Swift backtracer report inside stderr, counted without the parser:
/// for text, `Thread N …:` headings after `*** Program crashed:` and the frame lines under them
/// (`idx [flags] 0x…`); for JSON, JSONSerialization's `threads[].frames[]` entries with an
/// address that are not inline repeats. Images: `Images` lines with an en dash, or `images[]`.
func swiftBacktraceExpectedCounts(_ stderr: Data, format: String) throws -> (images: Int, threads: Int, frames: Int) {
    let text = String(decoding: stderr, as: UTF8.self)
    if format == "json" {
        let start = try #require(text.range(of: "{ \"timestamp\"")?.lowerBound, "no JSON report in stderr")
        let end = try #require(text.range(of: "}", options: .backwards)?.upperBound)
        let root = try #require(try JSONSerialization.jsonObject(with: Data(text[start..<end].utf8)) as? [String: Any])
        let threads = root["threads"] as? [[String: Any]] ?? []
        let frames = threads.flatMap { $0["frames"] as? [[String: Any]] ?? [] }
            .filter { $0["address"] != nil && $0["inlined"] as? Bool != true }
        return ((root["images"] as? [Any])?.count ?? 0, threads.count, frames.count)
    }
    let report = try #require(text.range(of: "*** Program crashed:")).lowerBound
    let lines = text[report...].split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let heading = try NSRegularExpression(pattern: #"^Thread \d+( "[^"]*")?( crashed)?:$"#)
    let frame = try NSRegularExpression(pattern: #"^\d+\s+(\[[a-z]+\]\s+)*0x[0-9a-f]+"#)
    func matches(_ regex: NSRegularExpression, _ line: String) -> Bool {
        regex.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil
    }
    var threads = 0, frames = 0, images = 0, inThread = false
    for line in lines {
        if matches(heading, line) { threads += 1; inThread = true; continue }
        if line.hasPrefix("Registers") || line.hasPrefix("Images") { inThread = false }
        if inThread && matches(frame, line) { frames += 1 }
        if line.hasPrefix("0x") && line.contains("–") { images += 1 }
    }
    return (images, threads, frames)
}

@Suite(.serialized) struct SwiftBacktraceFidelityTests {
    static let cases = ["index", "unwrap", "abort", "noisy"].flatMap { mode in ["text", "json"].map { (mode, $0) } }

    @Test(arguments: cases)
    func messageAppArchAndCountsFromRealStderr(_ mode: String, _ format: String) throws {
        let stderr = try SwiftCrashProgram.shared.stderr(mode, format: format)
        let expectedFormat = format == "json" ? "swift-backtrace-json" : "swift-backtrace-text"
        #expect(FormatRegistry.standard.detect(stderr)?.id == expectedFormat, "\(String(decoding: stderr.prefix(400), as: UTF8.self))")
        let report = try FormatRegistry.standard.detectAndParse(stderr)

        #expect(report.exception?.message == ledgerMessages[mode], "\(report.exception.map { "\($0)" } ?? "no exception")")
        #expect(report.app?.name == SwiftCrashProgram.name)
        #expect(report.arch?.name == (try runProcess("/usr/bin/uname", ["-m"])).stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        let prettyName = try #require(
            try String(contentsOfFile: "/etc/os-release", encoding: .utf8).split(separator: "\n")
                .first { $0.hasPrefix("PRETTY_NAME=") }?.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
        #expect(report.os == "Linux (\(prettyName))")
        #expect(report.exception?.signal == (mode == "abort" ? "SIGABRT" : "SIGILL"))

        let expected = try swiftBacktraceExpectedCounts(stderr, format: format)
        #expect(report.images.count == expected.images)
        #expect(report.threads.count == expected.threads)
        #expect(report.threads.reduce(0) { $0 + $1.frames.count } == expected.frames)
        #expect(report.threads.contains { $0.crashed })
    }

    /// The noisy run's stderr holds a `Thread 3 crashed:` line of its own before the report:
    /// only what follows `*** Program crashed:` is the report.
    @Test func outputBeforeTheReportIsNotPartOfIt() throws {
        let stderr = try SwiftCrashProgram.shared.stderr("noisy", format: "text")
        let text = String(decoding: stderr, as: UTF8.self)
        #expect(text.hasPrefix("Stack dump:"))
        let report = try FormatRegistry.standard.detectAndParse(stderr)
        #expect(!report.threads.contains { $0.index == 3 })
        #expect(report.threads.first?.index == 0)
    }

    /// Captured on this machine (see SOURCES.md): the same checks on the committed copies.
    @Test(arguments: [("Ledger-index.stderr.txt", "text", "index"), ("Ledger-unwrap.stderr.json.txt", "json", "unwrap")])
    func committedSamples(_ file: String, _ format: String, _ mode: String) throws {
        let data = try wildSample("swift-backtrace/\(file)")
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.exception?.message == ledgerMessages[mode])
        #expect(report.app?.name == "Ledger")
        #expect(report.arch?.name == "x86_64")
        #expect(report.os == "Linux (Debian GNU/Linux 12 (bookworm))")
        let expected = try swiftBacktraceExpectedCounts(data, format: format)
        #expect(report.images.count == expected.images)
        #expect(report.threads.count == expected.threads)
        #expect(report.threads.reduce(0) { $0 + $1.frames.count } == expected.frames)
    }

    @Test func trapMessagesLoseOnlyTheLibraryLocation() throws {
        let report = "*** Program crashed: Illegal instruction at 0x0000000000001000 ***\nThread 0 \"App\" crashed:\n0 0x0000000000001000\n"
        let located = try FormatRegistry.standard.detectAndParse(Data(("App/main.swift:3: Precondition failed: x > 0\n" + report).utf8))
        #expect(located.exception?.message == "Precondition failed: x > 0")
        // Not the runtime's line (no file:line in front): the description stands.
        let logged = try FormatRegistry.standard.detectAndParse(Data(("my log: Fatal error: not a location\n" + report).utf8))
        #expect(logged.exception?.message == "Illegal instruction")
        #expect(logged.app?.name == "App", "the main thread's name, with no image listed")
    }
}
