import Foundation
import Storage

/// The `status REPORT --json` shape.
public struct JobStatusJSON: Encodable, Sendable {
    public var reportId: Int64
    public var format: String
    public var kind: String
    public var state: String
    public var attempts: Int
    public var lastError: String?
    public var retryAt: Date?
    public var updatedAt: Date

    public init(_ job: JobStatus, now: Int64) {
        reportId = job.reportId
        format = job.format
        kind = "\(job.kind)"
        state = job.state.rawValue
        attempts = job.attempts
        lastError = job.lastError
        retryAt = job.state == .queued && job.runAfter > now ? Date(milliseconds: job.runAfter) : nil
        updatedAt = Date(milliseconds: job.updatedAt)
    }
}

/// The `status --json` shape: jobs per state, every state present.
public func queueCountsJSON(_ counts: [JobState: Int]) -> [String: Int] {
    Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0.rawValue, counts[$0] ?? 0) })
}
