#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import SystemCalls

/// Writes the lines swift-log's `StreamLogHandler` writes to standard error, byte for byte
/// (`2026-11-26T23:14:00+0000 info stackline.master: job=7 ms=1 [Master] job done`), at a
/// fraction of the cost. The master logs "job done" for every stored result, on the thread that
/// commits results, and there `StreamLogHandler` cost about 25 µs a line, 9% of that thread
/// (perf under scripts/bench-queue.sh): `localtime` stat()s /etc/localtime on every call, and the
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
        // The line's own metadata wins over the logger's, as StreamLogHandler merges them.
        // Under EscapingLogHandler the logger's is always empty (it passes the merged set).
        let all = metadata.isEmpty ? explicit ?? [:] : metadata.merging(explicit ?? [:]) { $1 }
        var text = Self.timestamp()
        text += " \(level)"
        if !label.isEmpty { text += " " + label }
        text += ":"
        for (key, value) in all.sorted(by: { $0.key < $1.key }) { text += " \(key)=\(value)" }
        text += " [\(source)] \(message)\n"
        sink(text)
    }

    /// Local time as `StreamLogHandler` prints it (`%Y-%m-%dT%H:%M:%S%z`), through `localtime_r`,
    /// which reads the zone once rather than on every call.
    static func timestamp(_ time: time_t = time(nil)) -> String {
        var seconds = time
        var local = tm()
        guard localtime_r(&seconds, &local) != nil else { return "<unknown>" }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
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
