import SQLInterface

/// One connected remote worker as the master last saw it (the `workers` table, what `stackline workers` lists).
public struct WorkerRow: Codable, Sendable, Equatable {
    public var id: String
    public var name: String
    /// Where it connected from, when known.
    public var address: String?
    public var slots: Int
    public var busy: Int
    public var jobsDone: Int
    /// Bytes of debug files in its cache.
    public var cacheBytes: Int64
    /// How many build ids its cache holds.
    public var holds: Int
    /// Debug files it fetched from the master since it started.
    public var fetches: Int
    /// Claims that found the job's debug files already in its cache, out of `affinityClaims`.
    public var affinityHits: Int
    public var affinityClaims: Int
    /// Milliseconds since the Unix epoch, like every time in the schema.
    public var connectedAt: Int64
    public var lastHeartbeat: Int64

    public init(
        id: String, name: String, address: String? = nil, slots: Int, busy: Int = 0, jobsDone: Int = 0,
        cacheBytes: Int64 = 0, holds: Int = 0, fetches: Int = 0, affinityHits: Int = 0, affinityClaims: Int = 0,
        connectedAt: Int64, lastHeartbeat: Int64
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

extension SQLStore {
    /// Writes every row (insert or replace by id) in one transaction, so a reader never sees
    /// half of the master's snapshot.
    public func saveWorkers(_ rows: [WorkerRow]) throws {
        guard !rows.isEmpty else { return }
        try write { db in
            for row in rows {
                try db.execute(
                    """
                    INSERT INTO workers (id, name, address, slots, busy, jobs_done, cache_bytes, holds, fetches,
                                         affinity_hits, affinity_claims, connected_at, last_heartbeat)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET
                        name = excluded.name, address = excluded.address, slots = excluded.slots,
                        busy = excluded.busy, jobs_done = excluded.jobs_done, cache_bytes = excluded.cache_bytes,
                        holds = excluded.holds, fetches = excluded.fetches, affinity_hits = excluded.affinity_hits,
                        affinity_claims = excluded.affinity_claims, connected_at = excluded.connected_at,
                        last_heartbeat = excluded.last_heartbeat
                    """,
                    row.id, row.name, row.address, row.slots, row.busy, row.jobsDone, row.cacheBytes, row.holds,
                    row.fetches, row.affinityHits, row.affinityClaims, row.connectedAt, row.lastHeartbeat)
            }
        }
    }

    /// Deletes workers not heard from since `lastHeartbeatBefore` (ms); returns how many went.
    @discardableResult
    public func deleteWorkers(lastHeartbeatBefore: Int64) throws -> Int {
        try write { db in try db.execute("DELETE FROM workers WHERE last_heartbeat < ?", lastHeartbeatBefore) }
    }

    /// The token owning worker id `id`, which becomes `token` (at `now`) when no token did: one
    /// transaction, so of two tokens connecting a new id at once exactly one gets it.
    public func bindWorker(_ id: String, token: Int64, now: Int64) throws -> Int64 {
        try write { db in
            try db.execute(
                """
                INSERT INTO worker_owners (worker_id, token_id, connected_at) VALUES (?, ?, ?)
                ON CONFLICT (worker_id) DO UPDATE SET connected_at = excluded.connected_at
                WHERE worker_owners.token_id = excluded.token_id
                """,
                id, token, now)
            return try db.int64("SELECT token_id FROM worker_owners WHERE worker_id = ?", id) ?? token
        }
    }

    /// The token owning worker id `id`, if one does.
    public func workerOwner(_ id: String) throws -> Int64? {
        try read { db in try db.int64("SELECT token_id FROM worker_owners WHERE worker_id = ?", id) }
    }

    /// Forgets the owners of worker ids that are not connected (not in `workers`) and last
    /// connected before `before` (ms): a worker makes a new id each time it starts.
    public func forgetWorkerOwners(connectedBefore before: Int64) throws {
        try write { db in
            try db.execute("DELETE FROM worker_owners WHERE connected_at < ? AND worker_id NOT IN (SELECT id FROM workers)", before)
        }
    }

    /// Every recorded worker, by name then id.
    public func workers() throws -> [WorkerRow] {
        try read { db in
            try db.rows(
                """
                SELECT id, name, address, slots, busy, jobs_done, cache_bytes, holds, fetches,
                       affinity_hits, affinity_claims, connected_at, last_heartbeat
                FROM workers ORDER BY name, id
                """
            ).map { row in
                WorkerRow(
                    id: try row.string(0), name: try row.string(1), address: try row.optionalString(2), slots: try row.int(3),
                    busy: try row.int(4), jobsDone: try row.int(5), cacheBytes: try row.int64(6), holds: try row.int(7),
                    fetches: try row.int(8), affinityHits: try row.int(9), affinityClaims: try row.int(10),
                    connectedAt: try row.int64(11), lastHeartbeat: try row.int64(12))
            }
        }
    }
}
