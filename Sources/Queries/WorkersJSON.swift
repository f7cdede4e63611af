import Foundation
import Storage

/// GET /api/v1/workers and `stackline workers --json`.
public struct WorkersJSON: Encodable {
    public var workers: [WorkerJSON]

    public init(_ rows: [WorkerRow]) { workers = rows.map(WorkerJSON.init) }
}

/// One worker as listed.
public struct WorkerJSON: Encodable {
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

    public init(_ row: WorkerRow) {
        id = row.id
        name = row.name
        address = row.address
        slots = row.slots
        busy = row.busy
        jobsDone = row.jobsDone
        cacheBytes = row.cacheBytes
        holds = row.holds
        fetches = row.fetches
        affinityHits = row.affinityHits
        affinityClaims = row.affinityClaims
        connectedAt = Date(timeIntervalSince1970: Double(row.connectedAt) / 1000)
        lastHeartbeat = Date(timeIntervalSince1970: Double(row.lastHeartbeat) / 1000)
    }
}
