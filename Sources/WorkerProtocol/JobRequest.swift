import Foundation

/// Master → worker: one job. The worker never opens the database, so the frame carries
/// everything it needs (`JobFrameCodec.swift` writes and reads it).
public struct JobRequest: Sendable, Equatable {
    public var jobId: Int64
    public var reportId: Int64
    /// 1 on the first try; lets test hooks misbehave only once.
    public var attempt: Int
    public var format: String
    /// Decompressed report bytes: the frame's attachment, as they are.
    public var raw: Data

    public init(jobId: Int64, reportId: Int64, attempt: Int, format: String, raw: Data) {
        self.jobId = jobId
        self.reportId = reportId
        self.attempt = attempt
        self.format = format
        self.raw = raw
    }
}
