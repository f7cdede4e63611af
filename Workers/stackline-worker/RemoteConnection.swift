#if canImport(Glibc)
import Glibc
#endif
import Foundation
import JSONFormat
import Grouping
import Logging
import ReportFormats
import ReportModel
import ServiceClient
import ServiceRuntime
import SymbolFetch
import SymbolStore
import WorkerProtocol

/// Settings of `stackline-worker --connect`.
struct RemoteSettings {
    var server: String
    var token: String
    var slots: Int
    var name: String
    var localStores: [SymbolStoreDirectory]
    var cacheDirectory: String
    var cacheBytes: Int64
    /// How the slot processes are started: this executable in pipe mode.
    var slotExecutable: String
    var slotArguments: [String]
    /// The environment the program started with (`StacklineEnvironment.variables`, read once by
    /// the entry point): slot processes start in it.
    var environment: [String: String]
}

/// Why the connection gave up for good (everything else is retried).
struct RemoteFatalError: Error, CustomStringConvertible {
    let description: String
}

/// A worker on another machine: connects to the master over HTTP, and runs one thread per
/// slot, each owning a `stackline-worker` child process fed with the same frames a local
/// worker gets, so a libdw crash costs one job attempt, never the connection. A heartbeat
/// thread renews the leases of every job held (finished results waiting to be delivered
/// too), so a partition shorter than the lease loses nothing.
/// Sendable: `lock` guards the connection's state (`welcome`, `session`, `fatal`, `held`, the
/// holdings, the grouping rules); `logger` is set in `init` and `signalSources` by `run`'s thread
/// before the slots start; the rest is immutable or locks itself (`StopFlag`, the cache, the client).
final class RemoteConnection: @unchecked Sendable {
    private let settings: RemoteSettings
    private let client: ServiceClient
    private let cache: FetchedDebugFiles
    private let registry = FormatRegistry.standard
    private var logger: Logger
    /// Random, chosen at start and kept across reconnects: the master's key for this worker.
    private let workerId = (0..<2).map { _ in String(UInt64.random(in: 1 << 60...UInt64.max), radix: 16) }.joined()
    private let stop = StopFlag()
    /// This process's environment as it started: slot processes get it, with the master's
    /// grouping rules added (`adoptGroupingRules`).
    private var startEnvironment: [String: String] { settings.environment }
    /// Where slot processes find the master's grouping rules (nil: the built-in rules).
    private var groupingRulesPath: String?
    /// How far apart reconnects, claims and result deliveries are retried while the master
    /// cannot be reached: 0.25 s doubling to 30 s, full jitter, so workers cut off together do
    /// not come back in lockstep.
    static let retryBackoff = Backoff(initialMs: 250, maxMs: 30_000, jitter: Backoff.fullJitter)

    private let lock = NSLock()
    private var welcome: WorkerWelcome?
    /// Bumped on every (re)connect, so a slot that saw 404 reconnects once, not once per slot.
    private var session = 0
    private var fatal: RemoteFatalError?
    private var held: [Int64: HeldJob] = [:]
    /// Build ids the master was last told about.
    private var advertised: Set<String> = []
    private var localIds: Set<String> = []
    private var localScannedAt = Date.distantPast
    /// What `currentHolds` last computed, and the cache's fetch and eviction counts it saw.
    private var holds: Set<String> = []
    private var holdsGeneration = -1
    /// Bumped when `holds` is rebuilt; `advertisedVersion` is the one the master was last told.
    private var holdsVersion = 0
    private var advertisedVersion = -1
    private var groupingRules: String?

    private struct HeldJob {
        var lease: LeaseRef
        var lost = false
    }

    init(settings: RemoteSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        do {
            client = try ServiceClient(base: settings.server, token: settings.token, option: "--connect")
        } catch {
            throw RemoteFatalError(description: error.description)
        }
        cache = try FetchedDebugFiles(
            directory: settings.cacheDirectory, capacityBytes: settings.cacheBytes, client: client,
            localStores: settings.localStores,
            logger: { [logger] message in logger.info("\(message)") })
        self.logger[metadataKey: "worker"] = "\(settings.name)"
    }

    /// Runs until SIGTERM/SIGINT (in-flight jobs finish and are delivered) or a fatal refusal.
    func run() throws {
        installStopSignals()
        try connect(replacing: nil)
        let heartbeat = Thread { [self] in heartbeatLoop() }
        heartbeat.name = "heartbeat"
        heartbeat.start()
        let group = DispatchGroup()
        for index in 0..<settings.slots {
            group.enter()
            let thread = Thread { [self] in
                defer { group.leave() }
                RemoteSlot(index: index, connection: self).run()
            }
            thread.name = "slot-\(index)"
            thread.start()
        }
        group.wait()
        stop.set()
        if let fatal = lock.withLock({ fatal }) { throw fatal }
        logger.notice("stopped")
    }

    // MARK: Connecting

    /// Connects (again, if `replacing` is the session a slot saw fail), with backoff and jitter
    /// while the master cannot be reached; a refused token is fatal.
    private func connect(replacing seen: Int?) throws {
        lock.lock()
        defer { lock.unlock() }
        if let seen, seen != session { return }
        var backoff = Backoff.Waits(Self.retryBackoff)
        while true {
            if let fatal { throw fatal }
            if stop.isSet && welcome != nil { return }
            let holds = currentHolds()
            let hello = WorkerHello(
                workerId: workerId, name: settings.name, slots: settings.slots, holds: holds.sorted(), cacheBytes: cache.sizeBytes)
            do {
                let answer = try client.postJSON("api/v1/workers/connect", hello, as: WorkerWelcome.self, timeout: 60)
                try adoptGroupingRules(answer.groupingRules, first: welcome == nil)
                welcome = answer
                advertised = holds
                advertisedVersion = holdsVersion
                session += 1
                logger.notice(
                    "connected",
                    metadata: [
                        "master": "\(client.base.absoluteString)", "slots": "\(settings.slots)", "holds": "\(holds.count)",
                        "lease": "\(answer.leaseSeconds)",
                    ])
                return
            } catch let error as ServiceClientError {
                try refuseIfFatal(error)
                let delay = backoff.next()
                logger.warning("cannot reach the master; retrying", metadata: ["error": "\(error)", "in": "\(String(format: "%.1f", delay))s"])
                lock.unlock()
                stop.wait(upTo: delay)
                lock.lock()
                if stop.isSet && welcome == nil { throw RemoteFatalError(description: "stopped before connecting") }
            }
        }
    }

    /// Slot processes group with the master's rules: written to a file named to them in their
    /// own environment (`slotCommand`: `STACKLINE_GROUPING_RULES`, never set in this process's),
    /// checked here so bad rules stop the worker once. Slots are started after the first connect;
    /// a master that changes its rules later needs its remote workers restarted, as its local ones are.
    private func adoptGroupingRules(_ document: String?, first: Bool) throws {
        guard first else {
            if document != groupingRules { logger.warning("the master's grouping rules changed; restart this worker to use them") }
            return
        }
        groupingRules = document
        guard let document else {
            groupingRulesPath = nil
            return
        }
        let path = NSTemporaryDirectory() + "/stackline-worker-\(getpid())-grouping-rules.json"
        do {
            try Data(document.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            _ = try GroupingRules.load(path: path)
        } catch {
            let refusal = RemoteFatalError(description: "cannot use the master's grouping rules: \(error)")
            fatal = refusal
            throw refusal
        }
        groupingRulesPath = path
    }

    /// A refused token (401, 403) or a protocol the master does not speak (400 on connect) is
    /// not something waiting mends: stop the worker with the master's reason.
    private func refuseIfFatal(_ error: ServiceClientError, connecting: Bool = true) throws(RemoteFatalError) {
        guard let status = error.status else { return }
        if status == 401 || status == 403 || (connecting && status == 400) {
            let refusal = RemoteFatalError(description: "the master refused this worker: \(error.description)")
            fatal = fatal ?? refusal
            stop.set()
            throw refusal
        }
    }

    private func recordFatal(_ error: ServiceClientError) -> Bool {
        lock.withLock {
            do { try refuseIfFatal(error, connecting: false) } catch { return true }
            return false
        }
    }

    /// Build ids held now: the local stores (rescanned each minute, as builds add files) and
    /// the cache. Caller holds `lock`.
    private func currentHolds() -> Set<String> {
        var changed = false
        if Date().timeIntervalSince(localScannedAt) > 60 {
            localIds = Set(settings.localStores.flatMap { $0.storedBuildIds() }.map(\.hex))
            localScannedAt = Date()
            changed = true
        }
        // The cache changes only by fetching and evicting: rebuild the set (every claim asks)
        // only when either count moved.
        let counts = cache.counters
        let generation = counts.fetches &+ counts.evictions &* 1_000_003
        if changed || generation != holdsGeneration || holdsGeneration < 0 {
            holds = localIds.union(cache.heldBuildIds.map(\.hex))
            holdsGeneration = generation
            holdsVersion += 1
        }
        return holds
    }

    var status: WorkerStatus {
        lock.withLock { WorkerStatus(busy: held.count, cacheBytes: cache.sizeBytes, fetches: cache.fetches) }
    }

    // MARK: What a slot calls

    /// A finished job whose result the slot has not delivered yet: its reply frame as the slot
    /// process wrote it (or as the slot wrote it for a process that died).
    struct Finished {
        var reply: Data
        var job: RemoteJob
        var log: Logger
        var at = Date()
    }

    /// Up to `maxJobs` jobs for a slot, held (their leases renewed) from here on; empty when
    /// nothing came within the wait, only results were answered, the master is unreachable
    /// (the slot's feeder asks again) or this worker is stopping. One request, except for
    /// retries while the master cannot be reached and a reconnect. Delivers `finished` with the claim, so jobs and results share
    /// requests; what could not be delivered this way goes to `courier`, which retries on its
    /// own. Reconnects when the master forgot this worker. `waitSeconds` 0 asks without waiting
    /// (a slot fetching its next jobs while its process works on the current one), and gives up
    /// on the first failure instead of retrying; `maxJobs` 0 only delivers.
    func claim(
        delivering finished: inout [Finished], courier: Courier, waitSeconds: Double, maxJobs: Int
    ) -> [RemoteJob] {
        var backoff = Backoff.Waits(Self.retryBackoff)
        defer {
            // Not delivered with a claim: the courier retries them while their leases may hold.
            for result in finished { courier.send(result) }
            finished = []
        }
        // Stopping: no more claims; the courier delivers what is finished through /result.
        while !stop.isSet {
            let results = finished.map { ResultHeader(lease: $0.job.lease, reportId: $0.job.reportId) }
            let (seen, request) = lock.withLock { () -> (Int, ClaimRequest) in
                let now = currentHolds()
                // Diffed only when the holdings were rebuilt: a build machine's store can list
                // tens of thousands of ids, and every claim passes here.
                let changed = holdsVersion != advertisedVersion
                let request = ClaimRequest(
                    // Short enough that a stopping worker is not held long by an idle poll.
                    waitSeconds: waitSeconds, maxJobs: maxJobs,
                    status: WorkerStatus(busy: held.count, cacheBytes: cache.sizeBytes, fetches: cache.fetches),
                    added: changed ? now.subtracting(advertised).sorted() : [],
                    removed: changed ? advertised.subtracting(now).sorted() : [],
                    results: results)
                advertised = now
                advertisedVersion = holdsVersion
                return (session, request)
            }
            let response: ServiceClient.Response
            do {
                let body = try Framing.bundle([try JSONStyle.compact.encode(request)] + finished.map(\.reply))
                response = try client.send(
                    "POST", "api/v1/workers/\(workerId)/claim",
                    body: .data(body, contentType: RemoteProtocol.framesContentType), timeout: waitSeconds + 55)
            } catch let error as ServiceClientError {
                lock.withLock {  // told nobody: tell again
                    advertised.subtract(request.added)
                    advertised.formUnion(request.removed)
                    advertisedVersion = -1
                }
                if waitSeconds == 0 || !finished.isEmpty { return [] }
                let delay = backoff.next()
                logger.warning("claim failed; retrying", metadata: ["error": "\(error)", "in": "\(String(format: "%.1f", delay))s"])
                stop.wait(upTo: delay)
                continue
            } catch {
                return []
            }
            switch response.status {
            case 200:
                let answer: ClaimAnswer
                let frames: [Data]
                do {
                    frames = try Framing.unbundle(response.body)
                    guard let envelope = frames.first else { throw FrameError.endOfStream }
                    answer = try JSONDecoder().decode(ClaimAnswer.self, from: envelope)
                    guard answer.jobs.count + 1 == frames.count else { throw FrameError.endOfStream }
                } catch {
                    logger.error("the master sent an answer this worker cannot read", metadata: ["error": "\(error)"])
                    return []
                }
                for delivered in answer.delivered {
                    guard let index = finished.firstIndex(where: { $0.job.lease.jobId == delivered.jobId }) else { continue }
                    let result = finished.remove(at: index)
                    if delivered.outcome == nil {
                        result.log.warning("result refused", metadata: ["reason": "\(delivered.message ?? "-")"])
                    }
                    drop(result.job.lease)
                }
                if !answer.jobs.isEmpty {
                    let jobs = zip(answer.jobs, frames.dropFirst()).map { job, frame in
                        RemoteJob(lease: job.lease, reportId: job.reportId, buildIds: job.buildIds, frame: frame)
                    }
                    lock.withLock { for job in jobs { held[job.lease.jobId] = HeldJob(lease: job.lease) } }
                    return jobs
                }
                if answer.reconnect == true {
                    do { try connect(replacing: seen) } catch { return [] }
                    if maxJobs == 0 { return [] }
                    continue
                }
                // Results answered, no job: the caller decides when to ask again (it may
                // have new results by then).
                return []
            case 204:
                return []
            case 404:
                // The master recorded the results before it found it did not know this worker;
                // the courier learns their fate (409 if they were stored).
                for result in finished { courier.send(result) }
                finished = []
                do { try connect(replacing: seen) } catch { return [] }
            default:
                let error = ServiceClientError(.status(response.status), "claim: \(response.status) \(response.errorMessage)")
                if recordFatal(error) || waitSeconds == 0 || !finished.isEmpty { return [] }
                let delay = backoff.next()
                logger.warning("claim refused; retrying", metadata: ["error": "\(error)", "in": "\(String(format: "%.1f", delay))s"])
                stop.wait(upTo: delay)
            }
        }
        return []
    }

    func drop(_ lease: LeaseRef) { lock.withLock { if held[lease.jobId]?.lease == lease { held[lease.jobId] = nil } } }
    func isLost(_ lease: LeaseRef) -> Bool { lock.withLock { held[lease.jobId]?.lost ?? true } }

    /// Debug files the job needs: from the master's list, else from the report itself.
    fileprivate func ensureDebugFiles(for job: RemoteJob) -> FetchPin {
        var ids = job.buildIds
        // A report stored before the queue kept build ids: read them from the report itself.
        if ids.isEmpty, let request = try? JobRequest(frame: job.frame),
            let raw = try? registry.parse(request.raw, format: request.format)
        {
            ids = raw.referencedBuildIds
        }
        return cache.ensure(ids)
    }

    /// Delivers a result, retrying while the lease may still be ours (the heartbeat keeps
    /// renewing it meanwhile). Stops when the master answers, the lease is lost, or stopping
    /// outlasts the lease.
    func deliver(_ frame: Data, for job: RemoteJob, log: Logger) {
        let lease = job.lease
        // The frame goes as the slot process wrote it; the master reads it.
        let body = RemoteResult(lease: lease, reportId: job.reportId, reply: frame).encodedJSON()
        var backoff = Backoff.Waits(Self.retryBackoff)
        let leaseSeconds = lock.withLock { welcome?.leaseSeconds ?? 30 }
        var lastFailure = Date()
        while !isLost(lease) {
            do {
                let response = try client.send(
                    "POST", "api/v1/workers/\(workerId)/result", body: .data(body, contentType: "application/json"), timeout: 120)
                switch response.status {
                case 200:
                    return
                case 409:
                    log.warning("result refused: the lease was taken over", metadata: ["reason": "\(response.errorMessage)"])
                    return
                case 400:
                    // The master cannot read this result (a malformed reply frame) and never will:
                    // as for one refused with a claim, the lease is let go and the job runs again.
                    log.warning("result refused", metadata: ["reason": "\(response.errorMessage)"])
                    return
                default:
                    let error = ServiceClientError(.status(response.status), "\(response.status) \(response.errorMessage)")
                    if recordFatal(error) { return }
                    log.warning("result not accepted; retrying", metadata: ["error": "\(error)"])
                }
            } catch {
                log.warning("cannot deliver the result; retrying while the lease may hold", metadata: ["error": "\(error)"])
            }
            lastFailure = Date()
            // Stopping: keep trying for one lease length, after which the master has requeued the job anyway.
            if let stoppedAt = stop.time, lastFailure.timeIntervalSince(stoppedAt) > leaseSeconds { return }
            Thread.sleep(forTimeInterval: backoff.next())  // stopping or not: delivering goes on
        }
        log.warning("result dropped: the master says the lease is no longer ours")
    }

    var isStopping: Bool { stop.isSet }
    var jobTimeout: Double { lock.withLock { welcome?.jobTimeoutSeconds ?? 60 } }
    /// How a slot process starts: this executable in pipe mode, in this process's starting
    /// environment with the master's grouping rules, or without any rules variable when the
    /// master has none (slots then use the built-in rules, as the master's own workers do).
    var slotCommand: WorkerCommand {
        var environment = startEnvironment
        environment[StacklineEnvironment.groupingRulesVariable] = lock.withLock { groupingRulesPath }
        return WorkerCommand(executable: settings.slotExecutable, arguments: settings.slotArguments, environment: environment)
    }
    var log: Logger { logger }

    // MARK: Heartbeats

    private func heartbeatLoop() {
        while true {
            let interval = lock.withLock { welcome?.heartbeatSeconds ?? 10 }
            Thread.sleep(forTimeInterval: interval)
            let leases = lock.withLock { held.values.filter { !$0.lost }.map(\.lease) }
            if stop.isSet && leases.isEmpty && lock.withLock({ fatal != nil || held.isEmpty }) { return }
            heartbeat(leases)
        }
    }

    /// One heartbeat: renews `leases`, hands back `release`; marks what the master says is lost.
    private func heartbeat(_ leases: [LeaseRef], release: [LeaseRef] = []) {
        let interval = lock.withLock { welcome?.heartbeatSeconds ?? 10 }
        let request = HeartbeatRequest(leases: leases, status: status, release: release)
        do {
            let answer = try client.postJSON(
                "api/v1/workers/\(workerId)/heartbeat", request, as: HeartbeatAnswer.self, timeout: max(5, interval * 2))
            // A result delivered while this heartbeat was on its way is no longer held: not lost.
            let lost = lock.withLock { answer.lost.filter { id in held[id] != nil && held[id]?.lost == false } }
            if !lost.isEmpty {
                lock.withLock { for id in lost { held[id]?.lost = true } }
                logger.warning("leases lost (taken over or timed out)", metadata: ["jobs": "\(lost)"])
            }
        } catch {
            if recordFatal(error) { return }
            logger.warning("heartbeat failed", metadata: ["error": "\(error)"])
        }
    }

    /// Hands jobs back unrun (jobs fetched ahead that would wait behind a slow one), so any
    /// idle worker can take them; if the master cannot be told, their leases simply expire.
    func handBack(_ jobs: [RemoteJob]) {
        guard !jobs.isEmpty else { return }
        for job in jobs { drop(job.lease) }
        heartbeat([], release: jobs.map(\.lease))
    }

    private var signalSources: [DispatchSourceSignal] = []

    private func installStopSignals() {
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in
                self?.logger.notice("stopping: no new claims; running jobs finish")
                self?.stop.set()
            }
            source.resume()
            signalSources.append(source)
        }
    }
}

/// One slot of a remote worker: a thread and the child process it owns (`WorkerSession`, the
/// job loop every worker shares).
private struct RemoteSlot {
    let index: Int
    let connection: RemoteConnection

    func run() {
        var log = connection.log
        log[metadataKey: "slot"] = "\(index)"
        let session = WorkerSession(command: connection.slotCommand, noun: "slot process", logger: log)
        let courier = Courier(connection: connection, name: "slot-\(index)-results")
        let feeder = SlotFeeder(connection: connection, courier: courier, name: "slot-\(index)-claims")
        defer {
            feeder.finish()
            courier.finish()
            session.stop(grace: 5)
        }
        while !connection.isStopping {
            do { try session.ensureStarted() } catch {
                log.error("cannot start a slot process", metadata: ["error": "\(error)"])
                continue
            }
            guard let job = feeder.next() else { continue }
            // Taken over while it waited (a partition longer than the lease): not ours to run.
            if connection.isLost(job.lease) {
                connection.drop(job.lease)
                continue
            }
            var jobLog = log
            jobLog[metadataKey: "job"] = "\(job.lease.jobId)"
            jobLog[metadataKey: "report"] = "\(job.reportId)"
            var handedBack = false
            let reply = run(job, on: session, jobLog) { elapsed in
                if elapsed > SlotFeeder.aheadLimitSeconds, !handedBack {
                    handedBack = true
                    feeder.handBackAhead()
                }
            }
            if let reply {
                feeder.deliver(RemoteConnection.Finished(reply: reply, job: job, log: jobLog))
            } else {
                connection.drop(job.lease)
            }
        }
    }

    /// Runs one job on the slot process; returns the reply frame to deliver (nil: the lease is
    /// lost, nothing to say). The frames pass through undecoded: the master checks the reply as
    /// it checks a local worker's. `whileRunning` is called at each wake of the wait (at least
    /// every 0.2 s) with the seconds since the job was sent.
    private func run(
        _ job: RemoteJob, on session: WorkerSession, _ log: Logger, whileRunning: (Double) -> Void
    ) -> Data? {
        // Held (renewed by the heartbeat) since its claim.
        let pin = connection.ensureDebugFiles(for: job)
        defer { pin.release() }
        let jobId = job.lease.jobId
        func reply(_ kind: JobReply.Kind, _ message: String) -> Data {
            JobReply.failureFrame(kind, jobId: jobId, message: message)
        }
        switch session.send(job.frame) {
        case .sent: break
        case .tooLarge(let size): return reply(.permanentError, Framing.jobFrameTooLarge(size))
        case .lost(let how): return reply(.workerLost, how)
        }
        let timeout = connection.jobTimeout
        let exit = session.awaitFrame(
            timeout: timeout, checkEvery: 0.2,
            onWake: { waited in
                whileRunning(max(waited, 0.001))
                return connection.isLost(job.lease) ? .abandon : .keepWaiting
            })
        switch exit {
        case .replied(let frame):
            return frame
        case .protocolError(let why, let permanent):
            return reply(permanent ? .permanentError : .workerLost, why)
        case .timedOut:
            log.warning("job timed out; slot process killed")
            return reply(.workerLost, exit.failure ?? "timed out")
        case .crashed(let how):
            log.warning("slot process died during job", metadata: ["exit": "\(how)"])
            return reply(.workerLost, how)
        case .abandoned:
            log.warning("lease lost during job; slot process killed, result discarded")
            return nil
        }
    }
}

/// A job this worker holds: its lease, and its `JobRequest` frame for the slot process.
struct RemoteJob {
    var lease: LeaseRef
    var reportId: Int64
    var buildIds: [BuildID]
    var frame: Data
}

/// Delivers the results a slot could not deliver with a claim (the master unreachable, or it
/// restarted), in order, on a thread of its own, so a slow or unreachable master delays
/// results, never the next job.
/// Sendable: `condition` guards `queue` and `finished`; `connection` and `done` are thread-safe.
final class Courier: @unchecked Sendable {
    private let connection: RemoteConnection
    private let condition = NSCondition()
    private var queue: [(Data, RemoteJob, Logger)] = []
    private var finished = false
    private let done = DispatchSemaphore(value: 0)

    init(connection: RemoteConnection, name: String) {
        self.connection = connection
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.start()
    }

    func send(_ result: RemoteConnection.Finished) { enqueue((result.reply, result.job, result.log)) }

    private func enqueue(_ item: (Data, RemoteJob, Logger)) {
        condition.withLock {
            queue.append(item)
            condition.signal()
        }
    }

    /// Returns once everything queued was delivered (or given up).
    func finish() {
        condition.withLock {
            finished = true
            condition.signal()
        }
        done.wait()
    }

    private func loop() {
        while true {
            let next: (Data, RemoteJob, Logger)? = condition.withLock {
                while queue.isEmpty && !finished { condition.wait() }
                return queue.isEmpty ? nil : queue.removeFirst()
            }
            guard let (reply, job, log) = next else { break }
            connection.deliver(reply, for: job, log: log)
            connection.drop(job.lease)
        }
        done.signal()
    }
}
