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
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return EscapingLogHandler(handler)
    }

    public var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue.mapValues(Self.escape) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue.map(Self.escape) }
    }

    public func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
        file: String, function: String, line: UInt
    ) {
        inner.log(
            level: level, message: "\(TerminalText.escape(message.description))", metadata: metadata?.mapValues(Self.escape),
            source: source, file: file, function: function, line: line)
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
