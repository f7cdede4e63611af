import Foundation

/// The `status REPORT --json` shape (`GET /api/v1/reports/{id}/status`).
public struct JobStatusJSON: Codable, Sendable {
    public var reportId: Int64
    public var format: String
    public var kind: String
    /// queued, running, done or failed.
    public var state: String
    public var attempts: Int
    public var lastError: String?
    public var retryAt: Date?
    public var updatedAt: Date

    public init(
        reportId: Int64, format: String, kind: String, state: String, attempts: Int, lastError: String?, retryAt: Date?,
        updatedAt: Date
    ) {
        self.reportId = reportId
        self.format = format
        self.kind = kind
        self.state = state
        self.attempts = attempts
        self.lastError = lastError
        self.retryAt = retryAt
        self.updatedAt = updatedAt
    }
}

/// GET /api/v1/workers and `stackline workers --json`.
public struct WorkersJSON: Codable, Sendable {
    public var workers: [WorkerJSON]

    public init(workers: [WorkerJSON]) { self.workers = workers }
}

/// One worker as listed.
public struct WorkerJSON: Codable, Sendable {
    public var id: String
    public var name: String
    public var address: String?
    public var slots: Int
    public var busy: Int
    public var jobsDone: Int
    public var cacheBytes: Int64
    public var holds: Int
    public var fetches: Int
    public var affinityHits: Int
    public var affinityClaims: Int
    public var connectedAt: Date
    public var lastHeartbeat: Date

    public init(
        id: String, name: String, address: String?, slots: Int, busy: Int, jobsDone: Int, cacheBytes: Int64, holds: Int,
        fetches: Int, affinityHits: Int, affinityClaims: Int, connectedAt: Date, lastHeartbeat: Date
    ) {
        self.id = id
        self.name = name
        self.address = address
        self.slots = slots
        self.busy = busy
        self.jobsDone = jobsDone
        self.cacheBytes = cacheBytes
        self.holds = holds
        self.fetches = fetches
        self.affinityHits = affinityHits
        self.affinityClaims = affinityClaims
        self.connectedAt = connectedAt
        self.lastHeartbeat = lastHeartbeat
    }
}

/// The answer of `POST /api/v1/symbols/reprocessing` (what `symbols upload --wait` polls).
public struct ReprocessingAnswer: Codable, Sendable {
    /// The newest job of one report.
    public struct Report: Codable, Sendable {
        public var id: Int64
        /// queued, running, done or failed.
        public var state: String

        public init(id: Int64, state: String) {
            self.id = id
            self.state = state
        }
    }

    /// The reports asked about that exist, with their newest job's state.
    public var reports: [Report]
    /// Jobs running in the whole queue (none for a while: no worker is claiming).
    public var running: Int

    public init(reports: [Report], running: Int) {
        self.reports = reports
        self.running = running
    }
}
