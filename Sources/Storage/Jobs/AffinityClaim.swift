import ReportModel
import SQLInterface

/// Which build ids a remote worker holds, which other connected workers hold, and how long a job held elsewhere waits for its holder.
public struct AffinityPreference: Sendable {
    /// Build ids whose debug files the claiming worker has cached.
    public var holds: Set<BuildID>
    /// Build ids some other connected worker has cached.
    public var heldElsewhere: Set<BuildID>
    /// How long (ms) a runnable job whose debug files only other workers hold is left for them.
    public var waitMs: Int64

    public init(holds: Set<BuildID>, heldElsewhere: Set<BuildID>, waitMs: Int64) {
        self.holds = holds
        self.heldElsewhere = heldElsewhere
        self.waitMs = waitMs
    }
}

/// How a claim matched the claimer's debug files.
public enum AffinityMatch: String, Sendable, Codable {
    /// The worker holds one of the job's build ids.
    case hit
    /// No connected worker holds any of them (or the job's build ids are unknown or empty).
    case neutral
    /// Another worker holds them, but the job waited longer than `waitMs`.
    case fallback
}

extension ServiceDatabase {
    /// How many runnable jobs, in claim order, an affinity claim considers (`SQLJobQueue.affinityCandidates`).
    public static let affinityCandidates = SQLJobQueue.affinityCandidates
}

extension SQLJobQueue {
    /// How many runnable jobs, in claim order, an affinity claim considers. A bound keeps each
    /// claim's cost flat however deep the queue is; a job beyond it is seen once those before it go.
    static let affinityCandidates = 256

    private static let affinityWindow = """
        SELECT jobs.id, jobs.run_after, reports.build_ids
        FROM jobs JOIN reports ON reports.id = jobs.report_id
        WHERE jobs.state = 'queued' AND jobs.run_after <= ?
        ORDER BY jobs.priority DESC, jobs.id LIMIT ?
        """
    static let affinityWindowSQLite = affinityWindow
    static let affinityWindowPostgres = affinityWindow + " FOR UPDATE OF jobs SKIP LOCKED"

    static func chooseByAffinity(
        _ db: SQLExecutor, now: Int64, affinity: AffinityPreference, limit: Int
    ) throws -> [(jobId: Int64, choice: AffinityMatch)] {
        // On PostgreSQL the window is locked (`SKIP LOCKED`, as a plain claim's candidates):
        // the rows not chosen are released when the claim commits.
        var hits: [(jobId: Int64, choice: AffinityMatch)] = []
        var neutral: [(jobId: Int64, choice: AffinityMatch)] = []
        var fallback: [(jobId: Int64, choice: AffinityMatch)] = []
        try db.scan(db.dialect == .sqlite ? affinityWindowSQLite : affinityWindowPostgres, [.integer(now), .integer(Int64(affinityCandidates))]) { row in
            let id = try row.int64(0)
            switch match(buildIds: try row.optionalString(2), affinity: affinity) {
            case .hit:
                hits.append((id, .hit))
            case .neutral:
                if neutral.count < limit { neutral.append((id, .neutral)) }
            case .fallback:
                let runAfter = try row.int64(1)
                if fallback.count < limit, now - runAfter >= affinity.waitMs { fallback.append((id, .fallback)) }
            }
            return hits.count < limit
        }
        return Array((hits + neutral + fallback).prefix(limit))
    }

    /// How a job with `buildIds` (the stored column) matches: `.fallback` here means only that
    /// another worker holds its files; whether it waited long enough is the caller's question.
    private static func match(buildIds: String?, affinity: AffinityPreference) -> AffinityMatch {
        guard let buildIds, !buildIds.isEmpty else { return .neutral }
        var elsewhere = false
        // Each id is read only for a set that can hold it (this runs for up to
        // `affinityCandidates` rows per claim); the column holds what `BuildID.hex` wrote.
        let checkHolds = !affinity.holds.isEmpty, checkElsewhere = !affinity.heldElsewhere.isEmpty
        guard checkHolds || checkElsewhere else { return .neutral }
        for word in buildIds.utf8.split(separator: UInt8(ascii: " ")) {
            guard let id = try? BuildID(Substring(word)) else { continue }
            if checkHolds, affinity.holds.contains(id) { return .hit }
            if checkElsewhere, !elsewhere, affinity.heldElsewhere.contains(id) { elsewhere = true }
        }
        return elsewhere ? .fallback : .neutral
    }
}

extension SQLStore {
    /// Claims up to `limit` runnable jobs that best suit a worker holding `affinity.holds`, in
    /// the order one claim at a time would take them: the jobs (in claim order, among the first
    /// `affinityCandidates`) whose debug files it holds, then those no connected worker holds,
    /// then those held elsewhere that have been runnable for `waitMs`. One read of the candidate
    /// window serves the whole batch: taking one job changes no other's class, so the order is
    /// what `limit` single claims would give (except that a single claim after the first would
    /// see one row further down the window). Empty when nothing suits now: the worker asks
    /// again. Leases, fencing and unreadable stored bytes are handled as by `claim(leaseMs:limit:)`.
    public func claim(
        leaseMs: Int64, affinity: AffinityPreference, limit: Int
    ) throws -> [(job: ClaimedJob, match: AffinityMatch)] {
        // Nobody connected holds anything (no store, nothing cached yet): every job is neutral,
        // and the plain claim order is the answer without reading a single build id.
        if affinity.holds.isEmpty && affinity.heldElsewhere.isEmpty {
            return try claim(leaseMs: leaseMs, limit: limit).map { ($0, .neutral) }
        }
        return try claim(leaseMs: leaseMs, limit: limit) { db, now, limit in
            try SQLJobQueue.chooseByAffinity(db, now: now, affinity: affinity, limit: limit)
        }.map { ($0.job, $0.choice) }
    }
}
