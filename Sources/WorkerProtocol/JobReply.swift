import ReportModel

/// Worker → master: the outcome of one job.
public struct JobReply: Codable, Sendable {
    public enum Kind: String, Codable, Sendable {
        /// `report` holds the symbolicated report.
        case result
        /// The report cannot be parsed: deterministic, never retried.
        case inputError
        /// Something in the worker went wrong: retried.
        case internalError
        /// The job can never succeed for a reason other than parsing, e.g. its reply would be
        /// over the frame limit: failed at once with `message`, never retried.
        case permanentError
    }

    public var kind: Kind
    public var jobId: Int64
    public var report: SymbolicatedReport?
    /// The report's crash fingerprint or lag key, computed by the worker right after symbolication.
    public var group: GroupKey?
    public var message: String?

    public init(
        kind: Kind, jobId: Int64, report: SymbolicatedReport? = nil, group: GroupKey? = nil, message: String? = nil
    ) {
        self.kind = kind
        self.jobId = jobId
        self.report = report
        self.group = group
        self.message = message
    }
}
