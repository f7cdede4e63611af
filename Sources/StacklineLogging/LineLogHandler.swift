#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import SystemCalls

/// Writes the lines swift-log's `StreamLogHandler` writes to standard error, byte for byte
/// (`2026-11-26T23:14:00+0000 info stackline.master: job=7 ms=1 [Master] job done`), at a
/// fraction of the cost. The master logs "job done" for every stored result, on the thread that
/// commits results, and there `StreamLogHandler` was a large part of that thread (perf under
/// scripts/bench-queue.sh): `localtime` stat()s /etc/localtime on every call, and the
/// metadata went through two merges and a lazy sort. Escaping stays `EscapingLogHandler`'s job.
public struct LineLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let sink: @Sendable (String) -> Void

    /// `sink` receives each line, newline included; standard error unless a test passes its own.
    public init(label: String, sink: (@Sendable (String) -> Void)? = nil) {
        self.label = label
        self.sink = sink ?? StandardError.write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(
        level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String,
        file: String, function: String, line: UInt
    ) {
        write(level: level, message: message.description, metadata: metadata, explicit: explicit, source: source) { "\($0)" }
    }

    /// Writes one line: `metadata` and the line's own `explicit` metadata (which wins, as
    /// `StreamLogHandler` merges them), sorted by key, each value as `render` spells it.
    /// `EscapingLogHandler` calls this with its metadata and its escaping, rather than merging
    /// and escaping two dictionaries first: with the timestamp below, the "job done" line costs
    /// the committing thread less (perf under scripts/bench-queue.sh).
    func write(
        level: Logger.Level, message: String, metadata: Logger.Metadata, explicit: Logger.Metadata?, source: String,
        render: (Logger.Metadata.Value) -> String
    ) {
        var entries: [(key: String, value: Logger.Metadata.Value)] = []
        entries.reserveCapacity(metadata.count + (explicit?.count ?? 0))
        for entry in explicit ?? [:] { entries.append(entry) }
        for entry in metadata where explicit?[entry.key] == nil { entries.append(entry) }
        entries.sort { $0.key < $1.key }
        var text = Self.timestamps.text(for: time(nil))
        text += " "
        text += level.rawValue
        if !label.isEmpty {
            text += " "
            text += label
        }
        text += ":"
        for (key, value) in entries {
            text += " "
            text += key
            text += "="
            text += render(value)
        }
        text += " ["
        text += source
        text += "] "
        text += message
        text += "\n"
        sink(text)
    }

    private static let timestamps = TimestampCache()

    /// Local time as `StreamLogHandler` prints it (`%Y-%m-%dT%H:%M:%S%z`), through `localtime_r`,
    /// which reads the zone once rather than on every call.
    static func timestamp(_ time: time_t) -> String {
        var seconds = time
        var local = tm()
        guard localtime_r(&seconds, &local) != nil else { return "<unknown>" }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The current second's timestamp: under load lines come by the thousand a second, and
/// `localtime_r` plus `strftime` for each made the same text over and over.
/// Sendable: `lock` guards `second` and `text`.
private final class TimestampCache: @unchecked Sendable {
    private let lock = NSLock()
    private var second: time_t = -1
    private var text = ""

    func text(for now: time_t) -> String {
        lock.lock()
        defer { lock.unlock() }
        if now != second {
            second = now
            text = LineLogHandler.timestamp(now)
        }
        return text
    }
}

/// Standard error, one whole line per write: the lock keeps threads' lines from interleaving.
private enum StandardError {
    static let lock = NSLock()

    @Sendable static func write(_ line: String) {
        var line = line
        lock.lock()
        defer { lock.unlock() }
        // A log line that cannot be written has nowhere to be reported.
        line.withUTF8 { try? SystemCall.writeAll(2, UnsafeRawBufferPointer($0)) }
    }
}
