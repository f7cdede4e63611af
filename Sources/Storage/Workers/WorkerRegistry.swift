import GRDB

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

extension ServiceDatabase {
    /// Writes every row (insert or replace by id) in one transaction, so a reader never sees
    /// half of the master's snapshot.
    public func saveWorkers(_ rows: [WorkerRow]) throws {
        guard !rows.isEmpty else { return }
        try immediate { db in
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO workers (id, name, address, slots, busy, jobs_done, cache_bytes, holds, fetches,
                                         affinity_hits, affinity_claims, connected_at, last_heartbeat)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET
                        name = excluded.name, address = excluded.address, slots = excluded.slots,
                        busy = excluded.busy, jobs_done = excluded.jobs_done, cache_bytes = excluded.cache_bytes,
                        holds = excluded.holds, fetches = excluded.fetches, affinity_hits = excluded.affinity_hits,
                        affinity_claims = excluded.affinity_claims, connected_at = excluded.connected_at,
                        last_heartbeat = excluded.last_heartbeat
                    """)
            for row in rows {
                try upsert.execute(arguments: [
                    row.id, row.name, row.address, row.slots, row.busy, row.jobsDone, row.cacheBytes, row.holds,
                    row.fetches, row.affinityHits, row.affinityClaims, row.connectedAt, row.lastHeartbeat,
                ])
            }
        }
    }

    /// Deletes workers not heard from since `lastHeartbeatBefore` (ms); returns how many went.
    @discardableResult
    public func deleteWorkers(lastHeartbeatBefore: Int64) throws -> Int {
        try immediate { db in
            try db.execute(sql: "DELETE FROM workers WHERE last_heartbeat < ?", arguments: [lastHeartbeatBefore])
            return db.changesCount
        }
    }

    /// The token owning worker id `id`, which becomes `token` (at `now`) when no token did: one
    /// transaction, so of two tokens connecting a new id at once exactly one gets it.
    public func bindWorker(_ id: String, token: Int64, now: Int64) throws -> Int64 {
        try immediate { db in
            try db.execute(
                sql: """
                    INSERT INTO worker_owners (worker_id, token_id, connected_at) VALUES (?, ?, ?)
                    ON CONFLICT (worker_id) DO UPDATE SET connected_at = excluded.connected_at WHERE token_id = excluded.token_id
                    """, arguments: [id, token, now])
            return try Int64.fetchOne(db, sql: "SELECT token_id FROM worker_owners WHERE worker_id = ?", arguments: [id]) ?? token
        }
    }

    /// The token owning worker id `id`, if one does.
    public func workerOwner(_ id: String) throws -> Int64? {
        try pool.read { db in try Int64.fetchOne(db, sql: "SELECT token_id FROM worker_owners WHERE worker_id = ?", arguments: [id]) }
    }

    /// Forgets the owners of worker ids that are not connected (not in `workers`) and last
    /// connected before `before` (ms): a worker makes a new id each time it starts.
    public func forgetWorkerOwners(connectedBefore before: Int64) throws {
        try immediate { db in
            try db.execute(
                sql: "DELETE FROM worker_owners WHERE connected_at < ? AND worker_id NOT IN (SELECT id FROM workers)", arguments: [before])
        }
    }

    /// Every recorded worker, by name then id.
    public func workers() throws -> [WorkerRow] {
        try pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, name, address, slots, busy, jobs_done, cache_bytes, holds, fetches,
                           affinity_hits, affinity_claims, connected_at, last_heartbeat
                    FROM workers ORDER BY name, id
                    """
            ).map { row in
                WorkerRow(
                    id: row["id"], name: row["name"], address: row["address"], slots: row["slots"], busy: row["busy"],
                    jobsDone: row["jobs_done"], cacheBytes: row["cache_bytes"], holds: row["holds"],
                    fetches: row["fetches"], affinityHits: row["affinity_hits"], affinityClaims: row["affinity_claims"],
                    connectedAt: row["connected_at"], lastHeartbeat: row["last_heartbeat"])
            }
        }
    }
}
