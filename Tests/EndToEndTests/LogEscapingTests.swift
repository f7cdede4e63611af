import Foundation
import Logging
import StacklineLogging
import Testing

/// Failure reasons quote report text; a newline or ESC in one must not forge a log line.
@Suite struct LogEscapingTests {
    /// Records what reaches the wrapped handler (the thing under test is the wrapper).
    final class Recorder: LogHandler, @unchecked Sendable {
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        var lines: [String] = []
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(
            level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
            file: String, function: String, line: UInt
        ) {
            let all = self.metadata.merging(metadata ?? [:]) { $1 }
            lines.append("\(message) " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        }
    }

    @Test func messagesAndMetadataComeOutEscaped() {
        let recorder = Recorder()
        var logger = Logger(label: "test") { _ in EscapingLogHandler(recorder) }
        logger[metadataKey: "image"] = "lib\u{1b}[31mred"
        logger.error(
            "job failed\nFORGED fake line",
            metadata: ["reason": "input error: \u{1b}]52;c;cGF5bG9hZA==\u{7}", "names": ["a\rb", "c\u{8}d"]])
        #expect(recorder.lines.count == 1)
        let line = recorder.lines[0]
        for unsafe in ["\n", "\r", "\u{1b}", "\u{7}", "\u{8}"] { #expect(!line.contains(unsafe), "\(line.debugDescription)") }
        #expect(line.hasPrefix("job failed\\nFORGED fake line "))
        #expect(line.contains("image=lib\\u{1b}[31mred"))
        #expect(line.contains("\\u{1b}]52;c;cGF5bG9hZA==\\u{7}"))
    }
}

/// `LineLogHandler` writes what swift-log's `StreamLogHandler` writes (the oracle), cheaper.
@Suite struct LineLogHandlerTests {
    final class Lines: @unchecked Sendable, TextOutputStream {
        private let lock = NSLock()
        private var stored: [String] = []
        var all: [String] { lock.withLock { stored } }
        func write(_ string: String) { lock.withLock { stored.append(string) } }
    }

    struct Stream: TextOutputStream, @unchecked Sendable {
        let lines: Lines
        mutating func write(_ string: String) { lines.write(string) }
    }

    @Test func linesAreStreamLogHandlersLines() throws {
        let ours = Lines(), theirs = Lines()
        var mine = Logger(label: "stackline.master") { label in LineLogHandler(label: label) { ours.write($0) } }
        var reference = Logger(label: "stackline.master") { label in
            StreamLogHandler(label: label, stream: Stream(lines: theirs), metadataProvider: nil)
        }
        for level in [Logger.Level.info, .warning, .error, .notice] {
            for set in [[:], ["slot": "0"], ["slot": "1", "report": "42", "a": "b c"]] as [Logger.Metadata] {
                for (key, value) in set {
                    mine[metadataKey: key] = value
                    reference[metadataKey: key] = value
                }
                let explicit: [Logger.Metadata?] = [nil, [:], ["frames": "30", "slot": "override"], ["list": ["x", "y"], "map": ["k": "v"]]]
                for metadata in explicit {
                    mine.log(level: level, "job done", metadata: metadata, source: "Master")
                    reference.log(level: level, "job done", metadata: metadata, source: "Master")
                }
            }
        }
        let (a, b) = (ours.all, theirs.all)
        #expect(a.count == b.count && a.count == 48)
        for (line, expected) in zip(a, b) {
            // The same second almost always; a line that straddles one compares from the level on.
            let drop: (String) -> Substring = { $0.drop { $0 != " " } }
            #expect(drop(line) == drop(expected), "\(line) vs \(expected)")
            #expect(line.split(separator: " ").first?.count == expected.split(separator: " ").first?.count)
        }
        let stamp = try #require(a.first?.split(separator: " ").first)
        #expect(stamp.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}/) != nil, "\(stamp)")
    }

    /// Every process logs through `EscapingLogHandler(LineLogHandler)`, which builds the line in
    /// one pass, escaping as it goes. It must write what the wrapper's general path (merge,
    /// escape each value, then the wrapped handler) makes StreamLogHandler write.
    @Test func escapedLinesAreStreamLogHandlersEscapedLines() {
        let ours = Lines(), theirs = Lines()
        var mine = Logger(label: "stackline.master") { label in EscapingLogHandler(LineLogHandler(label: label) { ours.write($0) }) }
        var reference = Logger(label: "stackline.master") { label in
            EscapingLogHandler(StreamLogHandler(label: label, stream: Stream(lines: theirs), metadataProvider: nil))
        }
        let values: [Logger.Metadata.Value] = [
            "plain", "a\nforged line", "\u{1b}[31mred\u{7}", "tab\there", "\u{2028}sep\u{202e}",
            ["x", "y\r\nz"], ["k": "v\u{1b}", "l": ["m\n"]],
        ]
        for (i, value) in values.enumerated() {
            mine[metadataKey: "slot"] = value
            reference[metadataKey: "slot"] = value
            for explicit in [nil, [:], ["frames": value, "slot": "override"], ["job": "\(i)", "why": value]] as [Logger.Metadata?] {
                mine.warning("job failed: \(value)", metadata: explicit, source: "Master")
                reference.warning("job failed: \(value)", metadata: explicit, source: "Master")
            }
        }
        let (a, b) = (ours.all, theirs.all)
        #expect(a.count == b.count && a.count == 28)
        for (line, expected) in zip(a, b) {
            let drop: (String) -> Substring = { $0.drop { $0 != " " } }
            #expect(drop(line) == drop(expected), "\(line.debugDescription) vs \(expected.debugDescription)")
            #expect(!line.dropLast().contains("\n") && !line.contains("\u{1b}"), "\(line.debugDescription)")
        }
    }
}
