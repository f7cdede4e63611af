import Foundation

/// Master → worker: one job. The worker never opens the database, so the frame carries
/// everything it needs.
public struct JobRequest: Codable, Sendable {
    public var jobId: Int64
    public var reportId: Int64
    /// 1 on the first try; lets test hooks misbehave only once.
    public var attempt: Int
    public var format: String
    /// Decompressed report bytes (base64 in the JSON frame).
    public var raw: Data

    public init(jobId: Int64, reportId: Int64, attempt: Int, format: String, raw: Data) {
        self.jobId = jobId
        self.reportId = reportId
        self.attempt = attempt
        self.format = format
        self.raw = raw
    }
}
