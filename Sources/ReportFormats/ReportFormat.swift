import Foundation
import ReportModel

/// One wire format: a cheap sniff and a full parse into `RawReport`.
public protocol ReportFormat: Sendable {
    /// Stable identifier stored with each report, e.g. `swift-backtrace-json`.
    var id: String { get }
    /// True when `data` looks like this format. Must be cheap: it runs on every submission.
    func matches(_ data: Data) -> Bool
    func parse(_ data: Data) throws(ReportParseError) -> RawReport
    /// The reports inside one input, as byte ranges of it, in order: a logcat capture with two
    /// tombstones holds two. Each part is stored and parsed on its own. Most formats hold one.
    func split(_ data: Data) -> [Data]
}

extension ReportFormat {
    public func split(_ data: Data) -> [Data] { [data] }
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
    /// The bytes are not UTF-8; `offset` is the 0-based index of the first bad byte.
    case invalidUTF8(offset: Int)
    /// The report holds more than `ReportLimits` allows; the reason names the limit.
    case overLimit(String)

    public var description: String {
        switch self {
        case .formatNotDetected(let why): "format not detected: \(why)"
        case .unknownFormat(let id): "unknown report format '\(id)'"
        case .invalidJSON(let message, let line?, let column?): "invalid JSON at line \(line), column \(column): \(message)"
        case .invalidJSON(let message, _, _): "invalid JSON: \(message)"
        case .invalidReport(let format, let reason): "malformed \(format) report: \(reason)"
        case .invalidUTF8(let offset): "not valid UTF-8 at byte \(offset)"
        case .overLimit(let reason): "report too large: \(reason) (limits: docs/formats.md)"
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
        // Binary, known by its magic: first, so no text format's sniff reads it.
        MinidumpFormat(),
        ElfCoreFormat(),
        SwiftBacktraceJSONFormat(),
        KSCrashFormat(),
        AppleIPSFormat(),
        AppleLegacyIPSFormat(),
        MetricKitFormat(),
        LagReportFormat(),
        SwiftBacktraceTextFormat(),
        AndroidTombstoneFormat(),
        SanitizerReportFormat(),
        AppleCrashTextFormat(),
    ])

    public func format(id: String) -> (any ReportFormat)? { formats.first { $0.id == id } }

    public func detect(_ data: Data) -> (any ReportFormat)? {
        let text = ReportEncoding(data).text
        return formats.first { $0.matches(text) }
    }

    /// Detects the format and parses. Unrecognised JSON is reported with its syntax error,
    /// if it has one, because "format not detected" would hide the real problem.
    public func detectAndParse(_ data: Data) throws(ReportParseError) -> RawReport {
        try Self.checkSize(data)
        return try ReportEncoding(data).parsing { data throws(ReportParseError) in
            if let format = formats.first(where: { $0.matches(data) }) { return try Self.checked(format.parse(data)) }
            if JSONText.looksLikeJSON(data) {
                _ = try JSONText.object(data)
                throw .formatNotDetected(
                    "JSON, but no known report format (expected a Swift runtime backtrace, KSCrash, .ips or SDK lag report; see docs/formats.md)")
            }
            throw .formatNotDetected(data.isEmpty ? "input is empty" : "not a known report format")
        }
    }

    /// Detects the format, splits the input into the reports it holds and parses each one. Every
    /// part comes back with its own bytes (what gets stored for it) and its own outcome, so one
    /// malformed crash in a capture never costs its neighbours. Throws only when the input as a
    /// whole is not a report.
    public func detectAndParseAll(_ data: Data) throws(ReportParseError) -> [ReportPart] {
        try Self.checkSize(data)
        guard let format = detect(data) else {
            _ = try detectAndParse(data)  // throws the precise reason
            return []
        }
        let input = ReportEncoding(data)
        let pieces = format.split(input.text)
        if pieces.count <= 1 {
            // The input as sent is what gets stored; `parse(_:format:)` reads its encoding again.
            let report = try input.parsing { text throws(ReportParseError) in try Self.checked(format.parse(text)) }
            return [ReportPart(data: data, format: format.id, outcome: .success(report))]
        }
        return pieces.map { piece in
            do throws(ReportParseError) {
                return ReportPart(data: piece, format: format.id, outcome: .success(try Self.checked(format.parse(piece))))
            } catch {
                return ReportPart(data: piece, format: format.id, outcome: .failure(error))
            }
        }
    }

    /// Parses bytes stored with format `id`.
    public func parse(_ data: Data, format id: String) throws(ReportParseError) -> RawReport {
        guard let format = format(id: id) else { throw .unknownFormat(id) }
        try Self.checkSize(data)
        return try ReportEncoding(data).parsing { text throws(ReportParseError) in try Self.checked(format.parse(text)) }
    }

    static func checkSize(_ data: Data) throws(ReportParseError) {
        guard data.count <= ReportLimits.maxReportBytes else {
            throw .overLimit("\(data.count) bytes, over the limit of \(ReportLimits.maxReportBytes)")
        }
    }

    /// Refuses a parsed report past `ReportLimits`; the text parsers also stop early, so this
    /// is where the JSON formats (bounded in values before decoding) are held to the same numbers.
    static func checked(_ report: RawReport) throws(ReportParseError) -> RawReport {
        var counter = LimitCounter()
        try counter.add(images: report.images.count)
        for thread in report.threads {
            try counter.addThread()
            try counter.add(frames: thread.frames.count, inThread: thread.index)
        }
        if let lag = report.lag {
            try LagTree.validate(lag, format: report.format)
            for sample in lag.samples { try counter.add(frames: sample.frames.count, inThread: nil) }
        }
        return report
    }
}

/// One report of an input that may hold several (`FormatRegistry.detectAndParseAll`).
public struct ReportPart: Sendable {
    /// This report's own bytes: a slice of the input, or all of it.
    public var data: Data
    public var format: String
    public var outcome: Result<RawReport, ReportParseError>
}

/// Counts what a report holds as it is parsed, so a text parser can stop at the first limit
/// it passes instead of first building the whole oversized report.
struct LimitCounter {
    private(set) var images = 0
    private(set) var threads = 0
    private(set) var frames = 0
    private var framesInThread = 0

    mutating func add(images count: Int = 1) throws(ReportParseError) {
        images += count  // overflow: array counts, each ≤ memory, and the total ≤ the limit after every add
        guard images <= ReportLimits.maxImages else {
            throw .overLimit("more than \(ReportLimits.maxImages) images")
        }
    }

    mutating func addThread() throws(ReportParseError) {
        threads += 1
        framesInThread = 0
        guard threads <= ReportLimits.maxThreads else {
            throw .overLimit("more than \(ReportLimits.maxThreads) threads")
        }
    }

    /// `inThread` names the thread in the message; nil for lag samples.
    mutating func add(frames count: Int = 1, inThread thread: Int?) throws(ReportParseError) {
        // overflow: array counts, each ≤ memory, and each total ≤ its limit after every add
        frames += count
        framesInThread += count  // overflow: as above
        if let thread, framesInThread > ReportLimits.maxFramesPerThread {
            throw .overLimit("thread \(thread) has more than \(ReportLimits.maxFramesPerThread) frames")
        }
        if thread == nil { framesInThread = 0 }
        guard frames <= ReportLimits.maxFrames else {
            throw .overLimit("more than \(ReportLimits.maxFrames) frames in all")
        }
    }
}

/// Parse warnings, at most `ReportLimits.maxWarnings` of them: a report of a million bad lines
/// must not hold a million messages. The rest are counted in a last line.
struct WarningLog {
    private(set) var lines: [String] = []
    private var dropped = 0

    mutating func append(_ warning: String) {
        if lines.count < ReportLimits.maxWarnings { lines.append(warning) } else { dropped += 1 }
    }

    /// The warnings kept, plus one line counting the ones that were not.
    var all: [String] { dropped == 0 ? lines : lines + ["… and \(dropped) more warnings"] }
}

/// Everything a lag report must satisfy for every renderer to show it (docs/formats.md,
/// "Limits"): the one check of lag data, run by each parser that makes `LagData` and again by
/// `FormatRegistry` on every parse, so a stored report always parses to data a page can draw.
enum LagTree {
    /// `format` names the report's format in messages; the tree's nodes are named as that format does.
    static func validate(_ lag: LagData, format: String) throws(ReportParseError) {
        guard lag.samples.count <= ReportLimits.maxLagSamples else {
            throw .overLimit("\(lag.samples.count) lag samples, over the limit of \(ReportLimits.maxLagSamples)")
        }
        try validate(lag.profile, format: format, nodes: format == MetricKitFormat().id ? "callStackTree node" : "thread_profile")
    }

    /// The tree is flattened in pre-order, so the first node is the root (depth 0) and each
    /// node is at most one level deeper than the node before it. Counts are samples, costs
    /// milliseconds; the counts of the whole tree together stay within
    /// `ReportLimits.maxProfileSamples`, so no sum a renderer makes of them can overflow.
    private static func validate(_ nodes: [ProfileNode], format: String, nodes field: String) throws(ReportParseError) {
        guard nodes.count <= ReportLimits.maxProfileNodes else {
            throw .overLimit("\(nodes.count) \(field) nodes, over the limit of \(ReportLimits.maxProfileNodes)")
        }
        var previous = -1
        var samples = 0
        for (i, node) in nodes.enumerated() {
            guard node.depth >= 0, node.count >= 0 else {
                throw .invalidReport(format: format, reason: "\(field)[\(i)]: negative depth or count")
            }
            // `previous` is at most maxProfileDepth, so `previous + 1` cannot overflow.
            guard node.depth <= previous + 1 else {
                throw .invalidReport(
                    format: format,
                    reason: i == 0
                        ? "\(field)[0]: depth \(node.depth); the first node is the root, at depth 0"
                        : "\(field)[\(i)]: depth \(node.depth) right after depth \(previous); a node is at most one level below the one before it")
            }
            guard node.depth <= ReportLimits.maxProfileDepth else {
                throw .overLimit("\(field)[\(i)] is at depth \(node.depth), over the limit of \(ReportLimits.maxProfileDepth)")
            }
            // Compared before adding: both sides are at most the limit.
            guard node.count <= ReportLimits.maxProfileSamples - samples else {
                throw .overLimit(
                    "\(field)[\(i)]: count \(node.count) brings the tree's samples past the limit of \(ReportLimits.maxProfileSamples)")
            }
            samples += node.count  // overflow: compared with the limit just above
            guard node.costTime.isFinite, node.costTime >= 0, node.costTime <= ReportLimits.maxProfileCostMilliseconds else {
                throw .invalidReport(
                    format: format,
                    reason: "\(field)[\(i)]: costTime \(node.costTime) is not a duration from 0 to \(Int64.clamping(ReportLimits.maxProfileCostMilliseconds)) ms")
            }
            previous = node.depth
        }
    }
}
