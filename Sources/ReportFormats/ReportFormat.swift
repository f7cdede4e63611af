import Foundation
import ReportModel

/// One wire format: a cheap sniff and a full parse into `RawReport`.
public protocol ReportFormat: Sendable {
    /// Stable identifier stored with each report, e.g. `swift-backtrace-json`.
    var id: String { get }
    /// True when `data` looks like this format. Must be cheap: it runs on every submission.
    func matches(_ data: Data) -> Bool
    func parse(_ data: Data) throws(ReportParseError) -> RawReport
}

/// Why bytes could not be turned into a `RawReport`. These are input errors: retrying cannot help.
public enum ReportParseError: Error, Equatable, CustomStringConvertible {
    /// No registered format recognised the input.
    case formatNotDetected(String)
    /// A stored report names a format this build does not know.
    case unknownFormat(String)
    /// The JSON itself is malformed; line and column are 1-based when known.
    case invalidJSON(String, line: Int?, column: Int?)
    /// Well-formed, but a required field is missing or has the wrong type.
    case invalidReport(format: String, reason: String)

    public var description: String {
        switch self {
        case .formatNotDetected(let why): "format not detected: \(why)"
        case .unknownFormat(let id): "unknown report format '\(id)'"
        case .invalidJSON(let message, let line?, let column?): "invalid JSON at line \(line), column \(column): \(message)"
        case .invalidJSON(let message, _, _): "invalid JSON: \(message)"
        case .invalidReport(let format, let reason): "malformed \(format) report: \(reason)"
        }
    }
}

/// The formats Stackline understands, tried in order.
public struct FormatRegistry: Sendable {
    public let formats: [any ReportFormat]

    public init(_ formats: [any ReportFormat]) { self.formats = formats }

    /// Every built-in format.
    /// JSON formats first (each sniffs its own top-level keys), then the text formats, whose
    /// markers (`*** Program crashed:`, `backtrace:` + `#00 pc`, Apple's header fields) exclude each other.
    public static let standard = FormatRegistry([
        SwiftBacktraceJSONFormat(),
        KSCrashFormat(),
        AppleIPSFormat(),
        LagReportFormat(),
        SwiftBacktraceTextFormat(),
        AndroidTombstoneFormat(),
        AppleCrashTextFormat(),
    ])

    public func format(id: String) -> (any ReportFormat)? { formats.first { $0.id == id } }

    public func detect(_ data: Data) -> (any ReportFormat)? { formats.first { $0.matches(data) } }

    /// Detects the format and parses. Unrecognised JSON is reported with its syntax error,
    /// if it has one, because "format not detected" would hide the real problem.
    public func detectAndParse(_ data: Data) throws(ReportParseError) -> RawReport {
        if let format = detect(data) { return try format.parse(data) }
        if JSONText.looksLikeJSON(data) {
            _ = try JSONText.object(data)
            throw .formatNotDetected(
                "JSON, but no known report format (expected a Swift runtime backtrace, KSCrash, .ips or SDK lag report; see docs/formats.md)")
        }
        throw .formatNotDetected(data.isEmpty ? "input is empty" : "not a known report format")
    }

    /// Parses bytes stored with format `id`.
    public func parse(_ data: Data, format id: String) throws(ReportParseError) -> RawReport {
        guard let format = format(id: id) else { throw .unknownFormat(id) }
        return try format.parse(data)
    }
}
