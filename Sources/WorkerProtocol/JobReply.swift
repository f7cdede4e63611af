import Compression
import Foundation
import ReportModel

/// Worker → master: the outcome of one job (`JobFrameCodec.swift` writes and reads it).
public struct JobReply: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        /// `result` holds the symbolicated report.
        case result
        /// The report cannot be parsed: deterministic, never retried.
        case inputError
        /// Something in the worker went wrong: retried.
        case internalError
        /// The job can never succeed for a reason other than parsing, e.g. its reply would be
        /// over the frame limit: failed at once with `message`, never retried.
        case permanentError
        /// Sent by a remote worker's connection for its slot process: it died, or was killed at
        /// the job timeout (`message` says which). Retried, as a local worker's death is.
        case workerLost
    }

    public var kind: Kind
    public var jobId: Int64
    public var result: CompressedResult?
    /// The report's crash fingerprint or lag key, computed by the worker right after symbolication.
    public var group: GroupKey?
    public var message: String?

    public init(
        kind: Kind, jobId: Int64, result: CompressedResult? = nil, group: GroupKey? = nil, message: String? = nil
    ) {
        self.kind = kind
        self.jobId = jobId
        self.result = result
        self.group = group
        self.message = message
    }
}

/// A symbolicated report in the form the database keeps it, made by the worker: its JSON,
/// zlib-compressed, plus the few facts the master records beside it. The master stores it as
/// it comes. Decoding the whole report from the reply, encoding it again and compressing it
/// cost the master several times what symbolicating it costs a worker (perf under
/// scripts/bench-serve.sh), and it ran in the process that also answers ingest.
public struct CompressedResult: Sendable, Equatable {
    /// zlib of the report's JSON (`SymbolicatedReportJSON`), as `results.symbolicated` holds it.
    public var compressed: Data
    /// The JSON's size before compression (`results.symbolicated_size`, the bound for inflating it).
    public var size: Int
    public var status: ReportStatus
    public var counts: ReportCounts
    /// The images whose debug files were missing, in report order, with their names.
    public var missing: [MissingDebugFile]

    /// A result read back from a reply frame, or made by a test.
    public init(compressed: Data, size: Int, status: ReportStatus, counts: ReportCounts, missing: [MissingDebugFile]) {
        self.compressed = compressed
        self.size = size
        self.status = status
        self.counts = counts
        self.missing = missing
    }

    public init(_ report: SymbolicatedReport) throws {
        let json = try SymbolicatedReportJSON.encode(report)
        compressed = Zlib.compress(Data(json))
        size = json.count
        status = report.status
        counts = ReportCounts(report)
        missing = MissingDebugFile.all(in: report)
    }

    /// True when `compressed` inflates to exactly `size` bytes: what the master checks before
    /// storing bytes it does not otherwise read (inflating costs a small part of what decoding
    /// the report did). A size over the frame limit is refused before inflating: no
    /// worker sends one (it replies `permanentError`), and a remote peer's claim must not
    /// decide how much the master inflates.
    public var isIntact: Bool {
        size >= 0 && size <= Framing.maxFrame && Zlib.inflatesExactly(compressed, size: size)
    }

    /// The report itself, for the callers that show it rather than store it.
    public func report() throws -> SymbolicatedReport {
        try JSONDecoder().decode(SymbolicatedReport.self, from: try Zlib.inflate(compressed, limit: max(size, 1)))
    }
}
