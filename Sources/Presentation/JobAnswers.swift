import APIModel
import Foundation
import Storage

extension JobStatusJSON {
    public init(_ job: JobStatus, now: Int64) {
        self.init(
            reportId: job.reportId, format: job.format, kind: "\(job.kind)", state: job.state.rawValue, attempts: job.attempts,
            lastError: job.lastError,
            retryAt: job.state == .queued && job.runAfter > now ? Date(milliseconds: job.runAfter) : nil,
            updatedAt: Date(milliseconds: job.updatedAt))
    }
}

/// The `status --json` shape: jobs per state, every state present.
public func queueCountsJSON(_ counts: [JobState: Int]) -> [String: Int] {
    Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0.rawValue, counts[$0] ?? 0) })
}

extension WorkersJSON {
    public init(_ rows: [WorkerRow]) { self.init(workers: rows.map(WorkerJSON.init)) }
}

extension WorkerJSON {
    public init(_ row: WorkerRow) {
        self.init(
            id: row.id, name: row.name, address: row.address, slots: row.slots, busy: row.busy, jobsDone: row.jobsDone,
            cacheBytes: row.cacheBytes, holds: row.holds, fetches: row.fetches, affinityHits: row.affinityHits,
            affinityClaims: row.affinityClaims, connectedAt: Date(timeIntervalSince1970: Double(row.connectedAt) / 1000),
            lastHeartbeat: Date(timeIntervalSince1970: Double(row.lastHeartbeat) / 1000))
    }
}
