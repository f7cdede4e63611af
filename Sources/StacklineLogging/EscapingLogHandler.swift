import Logging
import ReportModel

/// A log handler that escapes the message and every metadata value before the wrapped handler
/// writes them. Failure reasons quote report text (names, parser messages), and a newline or an
/// ESC sequence in one would forge log lines or drive the operator's terminal.
public struct EscapingLogHandler: LogHandler {
    private var inner: any LogHandler

    public init(_ inner: any LogHandler) { self.inner = inner }

    /// The standard-error handler every Stackline process logs through.
    public static func standardError(label: String, level: Logger.Level = .info) -> EscapingLogHandler {
        var handler = LineLogHandler(label: label)
        handler.logLevel = level
        return EscapingLogHandler(handler)
    }

    public var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    /// Kept here unescaped and escaped when a line is written: Hummingbird sets a request id on
    /// every request's logger, and escaping it (and the wrapped handler re-rendering its metadata)
    /// on each set showed in the ingest endpoint's profile (scripts/bench-serve.sh), for lines
    /// mostly never written.
    public var metadata: Logger.Metadata = [:]

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(
        level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String,
        file: String, function: String, line: UInt
    ) {
        if let lines = inner as? LineLogHandler, lines.metadata.isEmpty {
            // The line is built once, each value escaped as it is written.
            lines.write(
                level: level, message: TerminalText.escape(message.description), metadata: metadata, explicit: explicit,
                source: source, render: Self.render)
            return
        }
        // The line's own metadata wins over the logger's, as StreamLogHandler merges them.
        let merged = explicit.map { metadata.merging($0) { $1 } } ?? metadata
        inner.log(
            level: level, message: "\(TerminalText.escape(message.description))",
            metadata: merged.isEmpty ? nil : merged.mapValues(Self.escape),
            source: source, file: file, function: function, line: line)
    }

    /// A value as the wrapped handler prints it once escaped.
    static func render(_ value: Logger.Metadata.Value) -> String {
        if case .string(let text) = value { return TerminalText.escape(text) }
        return escape(value).description
    }

    static func escape(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(TerminalText.escape(text))
        case .stringConvertible(let item): .string(TerminalText.escape(item.description))
        case .array(let items): .array(items.map(escape))
        case .dictionary(let entries): .dictionary(entries.mapValues(escape))
        }
    }
}
