import Dispatch
import Foundation
import Storage
import Logging
import Metrics
internal import ReportModel
internal import ServiceRuntime
public import WorkerProtocol

/// The master's side of remote workers (`stackline-worker --connect`): who is connected and
/// which debug files each holds, claims with symbol affinity, lease renewal and results. The
/// server's routes call it; the database stays written by the master only, through the same
/// queue calls and `JobOutcomes` as the local slots, so a remote lease follows the local rules.
/// Sendable: `lock` guards `workers`, `holders`, `elsewhere`, `inflight`, `dirty` and `owners`;
/// the rest is immutable or thread-safe (the database, the completion writer).
public final class RemoteWorkerPool: @unchecked Sendable {
    private let db: any JobLeasing & WorkerRoster
    /// The master's completion writer, shared with its local slots (the `Dispatcher`).
    let completions: CompletionCommitter
    private let config: MasterConfiguration
    private let logger: Logger
    /// How long a job whose debug files another connected worker holds waits for that worker.
    public let affinityWaitSeconds: Double
    private let lock = NSLock()
    private var workers: [String: Worker] = [:]
    /// How many connected workers hold each build id: whether a job is "held elsewhere".
    private var holders: [BuildID: Int] = [:]
    /// Per worker, the build ids other workers hold; rebuilt when any holding changes.
    private var elsewhere: [String: Set<BuildID>] = [:]
    /// Remote jobs in flight on this master, for the job timeout. After a restart it starts
    /// empty: leases then only expire, and the workers enforce the timeout themselves.
    private var inflight: [Int64: InFlight] = [:]
    private var dirty = false
    /// Which token (by id) first connected each worker id, and when the id was last heard of:
    /// the database's `worker_owners` (which outlives a restart), cached. Kept after the worker
    /// goes (a day, see `flush`): a worker that comes back after a silence still finds its id
    /// its own.
    private var owners: [String: (token: Int64, lastSeen: Int64)] = [:]
    /// How long an owner is remembered after its worker was last connected.
    static let ownershipMs: Int64 = 24 * 3_600_000

    private struct Worker {
        var row: WorkerRow
        var holds: Set<BuildID>
    }

    private struct InFlight {
        var token: Int64
        var workerId: String
        var deadline: Date
    }

    /// The grouping rules document local workers get through the environment, sent to remote ones.
    private let groupingRules: String?

    /// `groupingRulesPath`: the rules file the master's workers use (already validated), if any.
    /// `completions`: the master's completion writer (a new one when nil); the `Dispatcher`
    /// given this pool uses the same one, so local and remote completions share transactions.
    public init(
        db: any JobLeasing & WorkerRoster, config: MasterConfiguration, affinityWaitSeconds: Double, groupingRulesPath: String? = nil,
        completions: CompletionCommitter? = nil, logger: Logger
    ) {
        self.db = db
        self.completions = completions ?? config.completionCommitter(store: db)
        self.config = config
        self.affinityWaitSeconds = affinityWaitSeconds
        self.logger = logger
        groupingRules = groupingRulesPath.flatMap { FileManager.default.contents(atPath: $0) }.map { String(decoding: $0, as: UTF8.self) }
    }

    private var leaseMs: Int64 { Int64(config.leaseSeconds * 1000) }

    /// A worker is listed as connected while it was heard from within this many milliseconds.
    var connectedWindowMs: Int64 { max(Int64(config.leaseSeconds * 2000), 10_000) }

    /// Workers heard from recently (for `/readyz`).
    public var connectedCount: Int {
        let now = db.now()
        return lock.withLock { workers.values.filter { now - $0.row.lastHeartbeat <= connectedWindowMs }.count }
    }

    // MARK: Messages

    /// Why a worker's message is refused.
    public enum Refusal: Error, CustomStringConvertible, Equatable {
        case protocolVersion(Int)
        case unknownWorker(String)
        case invalid(String)
        /// The worker id was connected first with another token.
        case notOwner(String)
        /// The database could not say or record who owns a worker id.
        case unavailable(String)

        public var description: String {
            switch self {
            case .protocolVersion(let v):
                "worker speaks protocol version \(v); this master speaks versions \(RemoteProtocol.oldestAccepted) to \(RemoteProtocol.version) (upgrade the master first, then the workers)"
            case .unknownWorker: "unknown worker: connect again (POST /api/v1/workers/connect)"
            case .invalid(let why): why
            case .notOwner(let id):
                "worker id \(id) belongs to the token that first connected it, not to this one (each worker makes a new id when it starts)"
            case .unavailable(let why): why
            }
        }
    }

    /// Refuses `token` for `workerId` when another token connected that id first: a token
    /// cannot claim, heartbeat or deliver as another token's worker, nor take its id over.
    /// Reads the database when the id is not cached (after a restart): call it off the event loop.
    public func requireOwner(workerId: String, token: Int64) throws(Refusal) {
        var owner = lock.withLock { owners[workerId]?.token }
        if owner == nil {
            do { owner = try db.workerOwner(workerId) } catch { throw .unavailable("cannot read the owner of worker id \(workerId): \(error)") }
            if let owner { lock.withLock { owners[workerId] = (owner, db.now()) } }
        }
        if let owner, owner != token { throw .notOwner(workerId) }
    }

    /// A worker connects (again), as `token`: the id becomes that token's if it is nobody's.
    public func connect(_ hello: WorkerHello, address: String?, token: Int64) throws(Refusal) -> WorkerWelcome {
        guard (RemoteProtocol.oldestAccepted...RemoteProtocol.version).contains(hello.protocolVersion) else {
            throw .protocolVersion(hello.protocolVersion)
        }
        guard (1...256).contains(hello.slots) else { throw .invalid("slots must be between 1 and 256") }
        guard Self.isValidId(hello.workerId) else { throw .invalid("workerId must be 8 to 64 letters, digits or dashes") }
        guard hello.holds.count <= Self.maxHolds else {
            throw .invalid("a worker may advertise at most \(Self.maxHolds) build ids; this one lists \(hello.holds.count)")
        }
        let name = String(hello.name.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7f }.prefix(128).map(Character.init))
        let now = db.now()
        let holds = Set(hello.holds.compactMap(Self.normalizedId))
        // The database decides (it outlives a restart, and one transaction settles a race).
        let owner: Int64
        do { owner = try db.bindWorker(hello.workerId, token: token, now: now) } catch {
            throw .unavailable("cannot record the owner of worker id \(hello.workerId): \(error)")
        }
        guard owner == token else {
            lock.withLock { owners[hello.workerId] = (owner, now) }
            throw .notOwner(hello.workerId)
        }
        let taken = lock.withLock { () -> Bool in
            // Checked and taken under one lock: two tokens racing for a new id cannot both win.
            if let owner = owners[hello.workerId], owner.token != token { return true }
            owners[hello.workerId] = (token, now)
            if let old = workers[hello.workerId] { release(old.holds) }
            let previous = workers[hello.workerId]?.row
            workers[hello.workerId] = Worker(
                row: WorkerRow(
                    id: hello.workerId, name: name.isEmpty ? hello.workerId : name, address: address, slots: hello.slots,
                    busy: 0, jobsDone: previous?.jobsDone ?? 0, cacheBytes: hello.cacheBytes, holds: holds.count,
                    fetches: previous?.fetches ?? 0,
                    affinityHits: previous?.affinityHits ?? 0, affinityClaims: previous?.affinityClaims ?? 0,
                    connectedAt: now, lastHeartbeat: now),
                holds: holds)
            acquire(holds)
            dirty = true
            return false
        }
        if taken { throw .notOwner(hello.workerId) }
        RemoteMetrics.connected.record(connectedCount)
        logger.notice(
            "remote worker connected",
            metadata: ["worker": "\(name)", "address": "\(address ?? "-")", "slots": "\(hello.slots)", "holds": "\(holds.count)"])
        return WorkerWelcome(
            leaseSeconds: config.leaseSeconds, heartbeatSeconds: max(0.1, config.leaseSeconds / 3),
            jobTimeoutSeconds: config.jobTimeout, groupingRules: groupingRules)
    }

    /// One claim attempt for a slot of `workerId`: up to `request.maxJobs` leases (capped per
    /// slot and per claim by `RemoteProtocol`), each with its `JobRequest` frame
    /// (encoded as for a local worker), in claim order; empty when nothing is runnable for it
    /// now (the route waits and asks again). Each job is chosen by the same affinity rule.
    public func claim(workerId: String, _ request: ClaimRequest) throws -> [(JobLease, Data)] {
        // Not `withLock` with a throwing closure: typed throws through it crash this compiler.
        lock.lock()
        guard var worker = workers[workerId] else {
            lock.unlock()
            throw Refusal.unknownWorker(workerId)
        }
        update(&worker, request.status)
        guard worker.holds.count + request.added.count <= Self.maxHolds else {
            lock.unlock()
            throw Refusal.invalid("a worker may advertise at most \(Self.maxHolds) build ids")
        }
        let added = Set(request.added.compactMap(Self.normalizedId)).subtracting(worker.holds)
        let removed = Set(request.removed.compactMap(Self.normalizedId)).intersection(worker.holds)
        if !added.isEmpty || !removed.isEmpty {
            worker.holds.formUnion(added)
            worker.holds.subtract(removed)
            worker.row.holds = worker.holds.count
            acquire(added)
            release(removed)
        }
        workers[workerId] = worker
        let preference = AffinityPreference(
            holds: worker.holds, heldElsewhere: heldElsewhere(by: workerId), waitMs: Int64(affinityWaitSeconds * 1000))
        let name = worker.row.name
        let limit = max(0, min(request.maxJobs, worker.row.slots * RemoteProtocol.maxJobsPerSlot, RemoteProtocol.maxJobsPerClaim))
        lock.unlock()
        var leased: [(JobLease, Data)] = []
        guard limit > 0, try db.hasRunnableJob() else { return leased }
        // One claim statement leases the whole batch (one read of the affinity window for all).
        for (job, match) in try db.claim(leaseMs: leaseMs, affinity: preference, limit: limit) {
            RemoteMetrics.claims(match).increment()
            lock.withLock {
                inflight[job.jobId] = InFlight(
                    token: job.leaseToken, workerId: workerId,
                    deadline: Date().addingTimeInterval(config.jobTimeout + Self.fetchAllowanceSeconds))
                workers[workerId]?.row.affinityClaims += 1
                if match == .hit { workers[workerId]?.row.affinityHits += 1 }
                dirty = true
            }
            logger.debug(
                "remote job claimed",
                metadata: ["worker": "\(name)", "job": "\(job.jobId)", "report": "\(job.reportId)", "affinity": "\(match.rawValue)"])
            let lease = LeaseRef(jobId: job.jobId, leaseToken: job.leaseToken)
            let frame: Data
            do {
                frame = try JobRequest(
                    jobId: job.jobId, reportId: job.reportId, attempt: job.attempts, format: job.format, raw: job.raw
                ).encodedFrame()
            } catch {
                // As a local slot fails it: the same report makes the same frame on every attempt.
                let failure: JobFailure = if case .tooLarge(let size) = error {
                    .permanent(Framing.jobFrameTooLarge(size))
                } else {
                    .retryable("cannot encode job frame: \(error)")
                }
                _ = try outcomes.fail(LeasedJob(job), failure, logger)
                forget(lease)
                continue
            }
            leased.append((JobLease(lease: lease, reportId: job.reportId, buildIds: job.buildIds), frame))
        }
        return leased
    }

    /// Build ids one worker may advertise: a bound on the master's memory per worker (a few
    /// tens of MB at most), far above a build machine's store.
    static let maxHolds = 500_000

    /// A remote worker kills its slot at the job timeout, as the master kills a local worker;
    /// its clock starts once the job's debug files are fetched, which over a network may take
    /// minutes. The master fails a job only when its worker keeps renewing it past both.
    static let fetchAllowanceSeconds = 600.0

    /// Renews each lease that is still the worker's; answers the ones that are not. A job held
    /// past the job timeout plus the fetch allowance is failed here (retried), as a hung local
    /// worker's is.
    public func heartbeat(workerId: String, _ request: HeartbeatRequest) throws -> HeartbeatAnswer {
        let name = lock.withLock { () -> String? in
            guard var worker = workers[workerId] else { return nil }
            update(&worker, request.status)
            workers[workerId] = worker
            return worker.row.name
        }
        var log = logger
        log[metadataKey: "worker"] = "\(name ?? workerId)"
        for lease in request.release.prefix(1024) {
            do {
                try db.release(jobId: lease.jobId, token: lease.leaseToken)
                log.debug("remote job handed back unrun", metadata: ["job": "\(lease.jobId)"])
            } catch StorageError.staleLease {}
            forget(lease)
        }
        var lost: [Int64] = []
        let now = Date()
        for lease in request.leases.prefix(1024) {
            let overdue = lock.withLock { inflight[lease.jobId].map { $0.token == lease.leaseToken && now > $0.deadline } ?? false }
            if overdue {
                var jobLog = log
                jobLog[metadataKey: "job"] = "\(lease.jobId)"
                jobLog.warning("remote job timed out")
                _ = try outcomes.fail(
                    LeasedJob(jobId: lease.jobId, leaseToken: lease.leaseToken, reportId: nil),
                    .retryable("held past the job timeout of \(formatSeconds(config.jobTimeout)) plus \(formatSeconds(Self.fetchAllowanceSeconds)) for fetching (remote worker \(name ?? workerId))"), jobLog)
                forget(lease)
                lost.append(lease.jobId)
                continue
            }
            do {
                try db.heartbeat(jobId: lease.jobId, token: lease.leaseToken, leaseMs: leaseMs)
            } catch StorageError.staleLease {
                forget(lease)
                lost.append(lease.jobId)
            }
        }
        return HeartbeatAnswer(lost: lost)
    }

    /// Records a result that came with a claim: its header, and its reply frame as the slot
    /// process wrote it (decoded here, as a local slot's reply is).
    public func complete(workerId: String, _ header: ResultHeader, replyFrame: Data) throws -> ResultAnswer.Outcome? {
        let reply = try Self.reply(replyFrame, for: header.lease)
        return try begin(workerId: workerId, lease: header.lease, reportId: header.reportId, reply: reply)()
    }

    /// Records the results that came with one claim, each answered on its own (a refused one
    /// does not stop the others). All are queued for the master's completion writer before any
    /// is waited for, so they commit together (and with other workers' and slots').
    public func complete(
        workerId: String, results: [(header: ResultHeader, replyFrame: Data)]
    ) throws -> [Result<ResultAnswer.Outcome?, Refusal>] {
        var pending: [Result<() throws -> ResultAnswer.Outcome?, Refusal>] = []
        for (header, frame) in results {
            do {
                let reply = try Self.reply(frame, for: header.lease)
                pending.append(.success(try begin(workerId: workerId, lease: header.lease, reportId: header.reportId, reply: reply)))
            } catch let refusal as Refusal {
                pending.append(.failure(refusal))
            }
        }
        var answers: [Result<ResultAnswer.Outcome?, Refusal>] = []
        for started in pending {
            switch started {
            case .success(let collect):
                answers.append(.success(try collect()))
            case .failure(let refusal):
                answers.append(.failure(refusal))
            }
        }
        return answers
    }

    /// A remote worker's reply frame, read as a local slot's is; one that cannot be read is
    /// refused, as its JSON was when it could not be decoded.
    private static func reply(_ frame: Data, for lease: LeaseRef) throws(Refusal) -> JobReply {
        do { return try JobReply(frame: frame) } catch {
            throw Refusal.invalid("the reply frame for job \(lease.jobId) is not a JobReply: \(error)")
        }
    }

    /// Records a remote worker's result through the same rules as a local slot's. Accepted from
    /// a worker the master does not know (it restarted): the fencing token decides.
    public func complete(workerId: String, _ result: RemoteResult) throws -> ResultAnswer.Outcome? {
        let reply = try Self.reply(result.reply, for: result.lease)
        return try begin(workerId: workerId, lease: result.lease, reportId: result.reportId, reply: reply)()
    }

    /// Starts recording `reply`; the returned closure waits for its commit and answers.
    private func begin(
        workerId: String, lease: LeaseRef, reportId: Int64, reply: JobReply
    ) throws -> () throws -> ResultAnswer.Outcome? {
        let name = lock.withLock { workers[workerId]?.row.name }
        var log = logger
        log[metadataKey: "worker"] = "\(name ?? workerId)"
        log[metadataKey: "job"] = "\(lease.jobId)"
        log[metadataKey: "report"] = "\(reportId)"
        guard reply.jobId == lease.jobId else {
            throw Refusal.invalid("reply is for job \(reply.jobId), the lease for job \(lease.jobId)")
        }
        let pending = try outcomes.begin(
            reply, for: LeasedJob(jobId: lease.jobId, leaseToken: lease.leaseToken, reportId: reportId),
            started: nil, log)
        return { [self] in
            let outcome = try pending.wait()
            forget(lease)
            switch outcome {
            case .stored:
                RemoteMetrics.results(.stored).increment()
                lock.withLock {
                    workers[workerId]?.row.jobsDone += 1
                    dirty = true
                }
                return .stored
            case .failureRecorded:
                RemoteMetrics.results(.failureRecorded).increment()
                return .failureRecorded
            case .stale:
                RemoteMetrics.staleResults.increment()
                return nil
            }
        }
    }

    // MARK: Listing

    /// The workers as `stackline workers` and GET /api/v1/workers show them.
    public func snapshot() -> [WorkerRow] {
        lock.withLock { workers.values.map(\.row) }.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    /// Writes the workers' rows to the database (for `stackline workers`) and forgets workers
    /// silent for longer than the connected window. Called by the dispatcher's loop.
    public func flush() {
        let now = db.now()
        let (rows, changed) = lock.withLock { () -> ([WorkerRow], Bool) in
            let gone = workers.filter { now - $0.value.row.lastHeartbeat > connectedWindowMs }
            for (id, worker) in gone {
                release(worker.holds)
                workers[id] = nil
                logger.notice("remote worker gone", metadata: ["worker": "\(worker.row.name)"])
            }
            for id in workers.keys { owners[id]?.lastSeen = now }
            owners = owners.filter { now - $0.value.lastSeen <= Self.ownershipMs }
            defer { dirty = false }
            return (workers.values.map(\.row), dirty || !gone.isEmpty)
        }
        guard changed else { return }
        RemoteMetrics.connected.record(rows.count)
        do {
            try db.saveWorkers(rows)
            _ = try db.deleteWorkers(lastHeartbeatBefore: now - connectedWindowMs)
            try db.forgetWorkerOwners(connectedBefore: now - Self.ownershipMs)
        } catch {
            logger.error("cannot record remote workers", metadata: ["error": "\(error)"])
        }
    }

    // MARK: Internals

    private var outcomes: JobOutcomes { JobOutcomes(db: db, completions: completions, retry: config.retry, symbolSources: config.symbolSources) }

    private func forget(_ lease: LeaseRef) {
        lock.withLock {
            if inflight[lease.jobId]?.token == lease.leaseToken { inflight[lease.jobId] = nil }
        }
    }

    /// Caller holds `lock`.
    private func update(_ worker: inout Worker, _ status: WorkerStatus) {
        worker.row.busy = max(0, min(status.busy, worker.row.slots))
        worker.row.cacheBytes = max(0, status.cacheBytes)
        worker.row.fetches = max(0, status.fetches)
        worker.row.lastHeartbeat = db.now()
        dirty = true
    }

    /// Caller holds `lock`.
    private func acquire(_ ids: Set<BuildID>) {
        guard !ids.isEmpty else { return }
        for id in ids { holders[id, default: 0] += 1 }
        elsewhere.removeAll()
    }

    /// Caller holds `lock`.
    private func release(_ ids: Set<BuildID>) {
        guard !ids.isEmpty else { return }
        for id in ids {
            let n = (holders[id] ?? 1) - 1
            holders[id] = n > 0 ? n : nil
        }
        elsewhere.removeAll()
    }

    /// Caller holds `lock`.
    private func heldElsewhere(by workerId: String) -> Set<BuildID> {
        if let cached = elsewhere[workerId] { return cached }
        let mine = workers[workerId]?.holds ?? []
        let others = Set(holders.lazy.filter { id, count in count > (mine.contains(id) ? 1 : 0) }.map(\.key))
        elsewhere[workerId] = others
        return others
    }

    private static func isValidId(_ id: String) -> Bool {
        (8...64).contains(id.utf8.count) && id.utf8.allSatisfy { $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0) }
    }

    /// A build id a worker advertised (JSON text, read here once); anything that is not one is dropped.
    static func normalizedId(_ text: String) -> BuildID? {
        try? BuildID(text, lengths: .anyByteCount)
    }
}

/// What remote workers add to `/metrics`.
enum RemoteMetrics {
    static let connected = Gauge(label: "stackline_remote_workers_connected")
    private static let hit = Counter(label: "stackline_affinity_claims_total", dimensions: [("match", "hit")])
    private static let neutral = Counter(label: "stackline_affinity_claims_total", dimensions: [("match", "neutral")])
    private static let fallback = Counter(label: "stackline_affinity_claims_total", dimensions: [("match", "fallback")])
    private static let stored = Counter(label: "stackline_remote_results_total", dimensions: [("outcome", "stored")])
    private static let failureRecorded = Counter(label: "stackline_remote_results_total", dimensions: [("outcome", "failure")])
    static let staleResults = Counter(label: "stackline_remote_results_total", dimensions: [("outcome", "stale")])

    static func claims(_ match: AffinityMatch) -> Counter {
        switch match {
        case .hit: hit
        case .neutral: neutral
        case .fallback: fallback
        }
    }

    static func results(_ outcome: ResultAnswer.Outcome) -> Counter {
        outcome == .stored ? stored : failureRecorded
    }
}
