#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Storage
import Logging
import Metrics
import SystemCalls
// Implementation details: none of these types appear in Master's API.
internal import ReportFormats
internal import ReportModel
internal import ServiceRuntime
internal import WorkerProtocol

/// One worker process and the thread that owns it: claims jobs, hands them over one at a time,
/// waits for each reply while renewing the lease (`WorkerSession`, the job loop every worker
/// shares), and records the outcome. Only this thread touches its worker.
///
/// Batching (docs/service-loop.md, "Claims and completions in batches"):
/// - Claims: the slot leases up to `config.prefetch` jobs per claim statement, each with its own
///   token. The next claim runs on another thread (`ClaimAhead`) once half of them are gone,
///   while the slot goes on feeding its worker, so neither waits for the write lock a claim
///   needs. Waiting jobs are covered by the slot's heartbeats like the running one, renewed before
///   they start if half their lease is gone, and handed back (`release`, the attempt not counted)
///   when the running job takes longer than `config.handBackSeconds` or the master stops: they
///   are then claimable at once by another slot or master, rather than after their lease
///   expires. Only a master killed outright leaves them to lease expiry (which counts the attempt).
/// - Completions: a result goes to the master's `CompletionCommitter` and commits in a batch with
///   the other slots' and remote workers'; the slot hands its worker the next job meanwhile and
///   collects outcomes as they commit, waiting only when `maxCommitting` are in flight (and for
///   all of them before it idles or stops), so the committer gets several per transaction.
/// - Hand-over: the worker gets its next job while it runs the current one (sent ahead), so it
///   starts the next the moment it has replied and never waits for its slot; a job too large to
///   send ahead (`WorkerProcess.canSendAhead`) goes the moment the reply arrives, before the
///   reply's outcome is recorded. A job handed over is in flight like any other (it runs through
///   a drain). At most one job waits inside a worker, behind the one it runs: if the worker
///   dies, is killed or is lost before it replied to the running one, the job behind never
///   started and goes back to the front of the line, its attempt not counted.
/// Sendable: handed once to its thread (`Dispatcher`); after `init`, only that thread touches it.
final class WorkerSlot: @unchecked Sendable {
    let index: Int
    private let db: any JobLeasing
    private let completions: CompletionCommitter
    private let config: MasterConfiguration
    private let stop: StopFlag
    private var logger: Logger
    private let census: WorkerCensus
    /// The worker process and the job loop over it.
    private let session: WorkerSession
    private var outcomes: JobOutcomes { JobOutcomes(db: db, completions: completions, retry: config.retry, symbolSources: config.symbolSources) }
    /// Leased and not yet handed to the worker, in claim order.
    private var prefetched: [ClaimedJob] = []
    /// The next claim, started before `prefetched` runs out.
    private let claims: ClaimAhead
    /// How long this slot's jobs take, which sizes its claims.
    private var pace = JobPace()
    /// Results handed to the committer and not yet collected, oldest first.
    private var committing: [PendingOutcome] = []
    /// How many results a slot may have committing at once. One (collect the last before
    /// recording the next) made a slot wait on every commit, and a worker on its slot: with the
    /// committer's transactions holding one or two results each, the committer was the busiest
    /// thread and the two cores were partly idle on 30-frame reports (scripts/bench-queue.sh). Several in flight let the
    /// committer batch them; each still commits or fails alone behind its own fencing token.
    /// 64 rather than 8: with eight, a slot waited on the committer's batch (several
    /// milliseconds under load) while its worker ran dry (slower in scripts/bench-queue.sh).
    static let maxCommitting = 64
    /// A job already written to the worker, next after the one it runs (sent ahead) or after
    /// the reply just read: `run` hands it to `handle` without sending it again. `started` is
    /// when the worker could begin it: when the reply before it arrived.
    private var handedOver: (job: ClaimedJob, started: DispatchTime, log: Logger)?

    init(
        index: Int, db: any JobLeasing, completions: CompletionCommitter, config: MasterConfiguration, stop: StopFlag,
        census: WorkerCensus, logger: Logger
    ) {
        self.index = index
        self.db = db
        self.completions = completions
        self.config = config
        self.stop = stop
        self.census = census
        self.logger = logger
        self.logger[metadataKey: "slot"] = "\(index)"
        claims = ClaimAhead(
            db, leaseMs: Int64(config.leaseSeconds * 1000), niceness: config.dispatchNiceness, name: "claims-\(index)")
        session = WorkerSession(
            command: WorkerCommand(executable: config.workerExecutable, arguments: config.workerArguments, niceness: config.workerNiceness),
            logger: self.logger)
        session.onStart = { [census] isRestart in census.started(isRestart: isRestart) }
        session.onEnd = { [unowned self] in
            census.stopped()
            // The job behind the one that ended this worker never started: it goes first to
            // the next worker, under the same lease.
            takeBackHandedOver()
        }
    }

    private var leaseMs: Int64 { Int64(config.leaseSeconds * 1000) }

    /// The slot's loop; returns when stopped, or in `--once` mode when no work is left.
    func run() throws {
        if config.dispatchNiceness > 0 { SystemCall.setThreadNiceness(config.dispatchNiceness) }
        defer { session.stop(grace: 5) }
        // After the hand-back below, which takes what a claim under way leased.
        defer { claims.close() }
        // Stopping (or a slot error) must not leave jobs that never started to lease expiry.
        defer { handBackPrefetched("slot stopping", includingHandedOver: true) }
        while true {
            // A job the worker already has is in flight: it runs even if the master is stopping.
            if let next = handedOver {
                handedOver = nil
                try handle(next.job, handedOverAt: (next.started, next.log))
                continue
            }
            guard !stop.isSet else { break }
            try session.ensureStarted()
            if prefetched.isEmpty {
                prefetched = try claims.take(waiting: true)
                    ?? db.claim(leaseMs: leaseMs, limit: pace.target(limit: config.prefetch))
            }
            if !prefetched.isEmpty {
                try handle(prefetched.removeFirst())
                continue
            }
            // Our own last completion counts as unfinished until it commits.
            try settle()
            if config.once, try db.unfinishedCount() == 0 { return }
            // `--once` waits here only for the other slots' last jobs, a few milliseconds of
            // work: at the idle poll's 0.1 s the drain often ended a whole poll after its last
            // result (scripts/bench-queue.sh; results.completed_at against the exit).
            Thread.sleep(forTimeInterval: config.once ? min(config.idlePollSeconds, 0.005) : config.idlePollSeconds)
        }
        try settle()
    }

    /// Collects the last completion's outcome; a database error that kept it from being written
    /// stops the slot, as it did when the slot wrote completions itself.
    private func settle(keepingAtMost limit: Int = 0) throws {
        // Answered ones are collected without waiting, so an error surfaces early.
        while let oldest = committing.first, committing.count > limit || oldest.isAnswered {
            committing.removeFirst()
            _ = try oldest.wait()
        }
    }

    /// Gives the leases of jobs that never reached the worker back, without counting an attempt:
    /// those waiting, those a claim under way leases, and one sent ahead to a worker that will
    /// not be asked for its reply (the slot is leaving).
    private func handBackPrefetched(_ why: String, includingHandedOver: Bool = false) {
        // A claim that failed leased nothing; the error itself surfaces on the slot's next claim.
        if let claimed = try? claims.take(waiting: true) { prefetched += claimed }
        if includingHandedOver { takeBackHandedOver() }
        for job in prefetched {
            do {
                try db.release(jobId: job.jobId, token: job.leaseToken)
                logger.debug("job handed back unstarted", metadata: ["job": "\(job.jobId)", "why": "\(why)"])
            } catch {
                // Stale (recovered meanwhile) or a database error: the lease expires on its own.
                logger.debug("job not handed back", metadata: ["job": "\(job.jobId)", "error": "\(error)"])
            }
        }
        prefetched.removeAll()
    }

    /// Puts the job written to the worker but not started back at the front of the line.
    private func takeBackHandedOver() {
        guard let next = handedOver else { return }
        prefetched.insert(next.job, at: 0)
        handedOver = nil
    }

    /// Renews the leases of the jobs waiting behind the running one; a job whose lease is no
    /// longer ours is dropped (someone else runs it). One already sent ahead cannot be taken
    /// back: if its lease is lost, the fencing token refuses its result.
    private func renewPrefetched() {
        if let next = handedOver {
            do {
                _ = try db.heartbeat(jobId: next.job.jobId, token: next.job.leaseToken, leaseMs: leaseMs)
            } catch {
                logger.warning("heartbeat of the job sent ahead failed", metadata: ["job": "\(next.job.jobId)", "error": "\(error)"])
            }
        }
        prefetched = prefetched.compactMap { job in
            var job = job
            do {
                job.leaseExpiresAt = try db.heartbeat(jobId: job.jobId, token: job.leaseToken, leaseMs: leaseMs)
                return job
            } catch StorageError.staleLease {
                logger.warning("lease of a waiting job lost; dropped", metadata: ["job": "\(job.jobId)"])
                return nil
            } catch {
                logger.warning("heartbeat failed", metadata: ["job": "\(job.jobId)", "error": "\(error)"])
                return job
            }
        }
    }

    // MARK: One job

    /// Renews the lease of a job about to start if half of it is gone: a job that waited (behind
    /// a slow one, or for a worker restart) starts with at least half a lease, counted from here
    /// rather than from the claim. False when the lease is no longer ours (the job is skipped).
    private func readyToStart(_ job: ClaimedJob, _ log: Logger) -> Bool {
        guard job.leaseExpiresAt - db.now() < leaseMs / 2 else { return true }
        do {
            _ = try db.heartbeat(jobId: job.jobId, token: job.leaseToken, leaseMs: leaseMs)
        } catch StorageError.staleLease {
            log.warning("lease of a waiting job lost before it started; skipped")
            return false
        } catch {
            // As for a running job's heartbeat: at worst the lease expires, and the fencing
            // token refuses the late completion.
            log.warning("heartbeat failed", metadata: ["error": "\(error)"])
        }
        return true
    }

    private func jobLogger(_ job: ClaimedJob) -> Logger {
        var log = logger
        log[metadataKey: "report"] = "\(job.reportId)"
        log[metadataKey: "job"] = "\(job.jobId)"
        return log
    }

    /// Runs `job` on the worker: hands it over (unless `handedOverAt` says that was done when the
    /// previous reply arrived), then waits for its reply while renewing the leases.
    private func handle(_ job: ClaimedJob, handedOverAt: (started: DispatchTime, log: Logger)? = nil) throws {
        let log = handedOverAt?.log ?? jobLogger(job)
        guard session.isRunning else {
            // Not started: it waits for the next worker process, still leased and renewed.
            prefetched.insert(job, at: 0)
            return
        }
        let started: DispatchTime
        if let handedOverAt {
            started = handedOverAt.started
        } else {
            guard readyToStart(job, log) else { return }
            started = DispatchTime.now()
            log.debug("job started", metadata: ["attempt": "\(job.attempts)", "worker": "\(session.pid ?? 0)"])
            switch send(job) {
            case .sent: break
            case .tooLarge(let size):
                // The same report makes the same frame on every attempt: fail once.
                try fail(job, .permanent(Framing.jobFrameTooLarge(size)), log)
                return
            case .lost(let how):
                try workerDied(job, how, log)
                return
            }
        }
        // The worker has its job: give it the next one to start when it replies, take in the
        // jobs of a claim that has been answered and start the next claim when few are left,
        // and collect the completions that have committed (waiting only if too many are in
        // flight), all while the worker runs this one.
        handOverNext(ahead: true)
        if let claimed = try claims.take(waiting: false) { prefetched += claimed }
        let held = 1 + prefetched.count + (handedOver == nil ? 0 : 1)
        let target = pace.target(limit: config.prefetch)
        if held <= target / 2, !stop.isSet {
            claims.start(limit: target - held)
        }
        try settle(keepingAtMost: Self.maxCommitting - 1)

        var drainPassed = false
        // Wakes for whichever comes first: heartbeat, job deadline, drain deadline; and at
        // least twice a second so a stop signal starts the drain clock promptly.
        let exit = session.awaitReply(
            to: job.jobId, timeout: config.jobTimeout, checkEvery: 0.5, heartbeatEvery: max(0.1, config.leaseSeconds / 3),
            wakeBy: { stop.time.map { $0.addingTimeInterval(config.drainSeconds) } },
            onWake: { waited in
                if !prefetched.isEmpty, stop.isSet || waited >= config.handBackSeconds {
                    handBackPrefetched(stop.isSet ? "master stopping" : "running job is slow")
                }
                if let stoppedAt = stop.time, Date().timeIntervalSince(stoppedAt) >= config.drainSeconds {
                    drainPassed = true
                    return .abandon
                }
                return .keepWaiting
            },
            onHeartbeat: {
                renewPrefetched()
                do {
                    try db.heartbeat(jobId: job.jobId, token: job.leaseToken, leaseMs: leaseMs)
                } catch StorageError.staleLease {
                    // Someone else owns the job now: stop wasting the worker on it.
                    return .abandon
                } catch {
                    // A missed heartbeat is survivable: at worst the lease expires and the fencing
                    // token keeps a late completion from counting twice.
                    log.warning("heartbeat failed", metadata: ["error": "\(error)"])
                }
                return .keepWaiting
            })
        switch exit {
        case .replied(let reply):
            try finish(job, reply: reply, started: started, log)
        case .protocolError(let why, let permanent):
            try fail(job, permanent ? .permanent(why) : .retryable(why), log)
        case .timedOut:
            log.warning("job timed out; worker killed")
            try fail(job, .retryable(exit.failure ?? "timed out"), log)
        case .crashed(let how):
            try workerDied(job, how, log)
        case .abandoned where drainPassed:
            do {
                try db.release(jobId: job.jobId, token: job.leaseToken)
                log.notice("drain deadline passed; lease released")
            } catch StorageError.staleLease {
                log.notice("drain deadline passed; lease already gone")
            }
        case .abandoned:
            log.warning("lease lost during job; worker killed, result discarded")
        }
    }

    private func workerDied(_ job: ClaimedJob, _ how: String, _ log: Logger) throws {
        log.warning("worker died during job", metadata: ["exit": "\(how)"])
        try fail(job, .retryable(how), log)
    }

    private func finish(_ job: ClaimedJob, reply: JobReply, started: DispatchTime, _ log: Logger) throws {
        // The worker has started the job sent ahead, if there is one; otherwise it gets its next
        // job now, before this reply's outcome is recorded (the committer's queue, the "job
        // done" line): between a reply and the next job, a worker waited on all the slot's
        // bookkeeping, leaving the cores partly idle on 30-frame reports (scripts/bench-queue.sh).
        let replied = DispatchTime.now()
        pace.record(seconds: Double(replied.uptimeNanoseconds &- min(started.uptimeNanoseconds, replied.uptimeNanoseconds)) / 1e9)
        if let next = handedOver { handedOver = (next.job, replied, next.log) }
        handOverNext(ahead: false)
        // Not waited for here: the slot hands its worker the next job while this one commits.
        committing.append(try outcomes.begin(reply, for: LeasedJob(job), started: started, log))
    }

    /// Writes the first waiting job to the worker: `ahead` while the worker still runs a job
    /// (only a frame `canSendAhead` allows, which never blocks), otherwise right after its
    /// reply, when it reads at once. Anything unusual (the master stopping, a lease to renew
    /// that is gone, a frame over the limit, a worker that cannot take it) is left to
    /// `handle`'s usual path: the job goes back to the front of the waiting ones.
    private func handOverNext(ahead: Bool) {
        guard !stop.isSet, handedOver == nil, session.isRunning, let next = prefetched.first else { return }
        // A report too large to go ahead is not encoded only to be dropped: it goes after the reply.
        guard !ahead || session.canSendAhead(next.raw.count) else { return }
        let log = jobLogger(next)
        guard readyToStart(next, log) else {
            prefetched.removeFirst()
            return
        }
        guard let frame = try? Self.frame(for: next), !ahead || session.canSendAhead(frame.count) else { return }
        let started = DispatchTime.now()
        switch session.send(frame) {
        case .sent: break
        case .tooLarge:
            // Nothing was written: `handle` fails it when its turn comes.
            return
        case .lost(let how):
            // The job stays first in line, unstarted, for the next worker process.
            log.warning("worker lost while taking its next job; restarting it", metadata: ["exit": "\(how)"])
            return
        }
        prefetched.removeFirst()
        handedOver = (next, started, log)
        log.debug("job started", metadata: ["sentAhead": "\(ahead)", "attempt": "\(next.attempts)", "worker": "\(session.pid ?? 0)"])
    }

    private static func frame(for job: ClaimedJob) throws(FrameError) -> Data {
        try JobRequest(jobId: job.jobId, reportId: job.reportId, attempt: job.attempts, format: job.format, raw: job.raw)
            .encodedFrame()
    }

    /// Encodes and writes `job`; a frame over the limit is refused before a byte is written.
    private func send(_ job: ClaimedJob) -> SendOutcome {
        do { return session.send(try Self.frame(for: job)) } catch .tooLarge(let size) {
            return .tooLarge(size)
        } catch {
            return .lost("\(error)")
        }
    }

    private func fail(_ job: ClaimedJob, _ failure: JobFailure, _ log: Logger) throws {
        try outcomes.fail(LeasedJob(job), failure, log)
    }
}
