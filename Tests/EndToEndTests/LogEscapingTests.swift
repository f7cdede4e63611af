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
