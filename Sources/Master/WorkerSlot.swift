#if canImport(Glibc)
import Glibc
#endif
import Foundation
import JobQueue
import Logging
import Metrics
// Implementation details: none of these types appear in Master's API.
internal import ReportFormats
internal import ReportModel
internal import WorkerProtocol

/// One worker process and the thread that owns it: claims a job, hands it over, waits for the
/// reply while renewing the lease, and writes the outcome. Only this thread touches its worker.
final class WorkerSlot: @unchecked Sendable {
    let index: Int
    private let db: any JobLeasing
    private let config: MasterConfiguration
    private let stop: StopFlag
    private var logger: Logger
    private let census: WorkerCensus
    private var everStarted = false
    private var worker: WorkerProcess? {
        didSet {
            if oldValue != nil, worker == nil { census.stopped() }
            if oldValue == nil, worker != nil {
                census.started(isRestart: everStarted)
                everStarted = true
            }
        }
    }
    private var lastSpawn = Date.distantPast
    private var outcomes: JobOutcomes { JobOutcomes(db: db, retry: config.retry) }

    init(index: Int, db: any JobLeasing, config: MasterConfiguration, stop: StopFlag, census: WorkerCensus, logger: Logger) {
        self.index = index
        self.db = db
        self.config = config
        self.stop = stop
        self.census = census
        self.logger = logger
        self.logger[metadataKey: "slot"] = "\(index)"
    }

    private var leaseMs: Int64 { Int64(config.leaseSeconds * 1000) }

    /// The slot's loop; returns when stopped, or in `--once` mode when no work is left.
    func run() throws {
        defer { shutdownWorker() }
        while !stop.isSet {
            try ensureWorker()
            if let job = try db.claim(leaseMs: leaseMs) {
                try handle(job)
                continue
            }
            if config.once, try db.unfinishedCount() == 0 { return }
            Thread.sleep(forTimeInterval: config.idlePollSeconds)
        }
    }

    // MARK: Worker lifecycle

    private func ensureWorker() throws {
        if let worker, let exit = worker.poll() {
            logger.warning("worker exited while idle", metadata: ["pid": "\(worker.pid)", "exit": "\(exit)"])
            self.worker = nil
        }
        guard worker == nil else { return }
        // A worker that dies at start must not turn into a fork loop.
        let sinceLast = Date().timeIntervalSince(lastSpawn)
        if sinceLast < 1 { Thread.sleep(forTimeInterval: 1 - sinceLast) }
        lastSpawn = Date()
        let started = try WorkerProcess(
            executable: config.workerExecutable, arguments: config.workerArguments, niceness: config.workerNiceness)
        logger.debug("worker started", metadata: ["pid": "\(started.pid)"])
        worker = started
    }

    private func shutdownWorker() {
        guard let worker else { return }
        worker.closeInput()
        let exit = worker.wait(upTo: 5)
        logger.debug("worker stopped", metadata: ["pid": "\(worker.pid)", "exit": "\(exit)"])
        self.worker = nil
    }

    /// Kills the current worker and returns how it ended.
    private func killWorker() -> WorkerExit? {
        guard let worker else { return nil }
        worker.kill(SIGKILL)
        let exit = worker.wait()
        self.worker = nil
        return exit
    }

    // MARK: One job

    private func handle(_ job: ClaimedJob) throws {
        let started = DispatchTime.now()
        var log = logger
        log[metadataKey: "report"] = "\(job.reportId)"
        log[metadataKey: "job"] = "\(job.jobId)"
        guard let worker else { return }
        log.debug("job started", metadata: ["attempt": "\(job.attempts)", "worker": "\(worker.pid)"])

        let request = JobRequest(
            jobId: job.jobId, reportId: job.reportId, attempt: job.attempts, format: job.format, raw: job.raw)
        let payload: Data
        do { payload = try JSONEncoder().encode(request) } catch {
            try fail(job, .retryable("cannot encode job frame: \(error)"), log)
            return
        }
        do {
            try worker.send(payload)
        } catch .tooLarge(let size) {
            // Checked before a byte is written, so the worker's stream is still in sync. The
            // same report makes the same frame on every attempt: fail once.
            try fail(job, .permanent(
                "report is \(size) bytes as a job frame, over the frame limit of \(Framing.describe(bytes: Framing.maxFrame))"), log)
            return
        } catch {
            try workerDied(job, log)
            return
        }

        let jobDeadline = Date().addingTimeInterval(config.jobTimeout)
        let heartbeatInterval = max(0.1, config.leaseSeconds / 3)
        var nextHeartbeat = Date().addingTimeInterval(heartbeatInterval)
        while true {
            // Wake for whichever comes first: heartbeat, job deadline, drain deadline; and at
            // least twice a second so a stop signal starts the drain clock promptly.
            var wakeAt = min(nextHeartbeat, jobDeadline, Date().addingTimeInterval(0.5))
            if let stoppedAt = stop.time { wakeAt = min(wakeAt, stoppedAt.addingTimeInterval(config.drainSeconds)) }
            let waitMs = Int32(max(0, min(wakeAt.timeIntervalSinceNow * 1000, 3_600_000)))
            let frame: Data?
            do {
                frame = try worker.reader.read(timeoutMs: waitMs)
            } catch .tooLarge(let size) {
                // The worker checks its reply against the same limit, so this is a worker with
                // another limit; the reply is as large on every attempt, and the stream is lost.
                _ = killWorker()
                try fail(job, .permanent(
                    "worker reply is \(size) bytes, over the frame limit of \(Framing.describe(bytes: Framing.maxFrame))"), log)
                return
            } catch {
                try workerDied(job, log)
                return
            }
            if let frame {
                try finish(job, reply: frame, started: started, log)
                return
            }
            let now = Date()
            if now >= jobDeadline {
                _ = killWorker()
                log.warning("job timed out; worker killed")
                try fail(job, .retryable("timed out after \(formatSeconds(config.jobTimeout)) (worker killed)"), log)
                return
            }
            if let stoppedAt = stop.time, now.timeIntervalSince(stoppedAt) >= config.drainSeconds {
                _ = killWorker()
                do {
                    try db.release(jobId: job.jobId, token: job.leaseToken)
                    log.notice("drain deadline passed; lease released")
                } catch JobQueueError.staleLease {
                    log.notice("drain deadline passed; lease already gone")
                }
                return
            }
            guard now >= nextHeartbeat else { continue }
            nextHeartbeat = now.addingTimeInterval(heartbeatInterval)
            do {
                try db.heartbeat(jobId: job.jobId, token: job.leaseToken, leaseMs: leaseMs)
            } catch JobQueueError.staleLease {
                // Someone else owns the job now: stop wasting the worker on it.
                _ = killWorker()
                log.warning("lease lost during job; worker killed, result discarded")
                return
            } catch {
                // A missed heartbeat is survivable: at worst the lease expires and the fencing
                // token keeps a late completion from counting twice.
                log.warning("heartbeat failed", metadata: ["error": "\(error)"])
            }
        }
    }

    private func workerDied(_ job: ClaimedJob, _ log: Logger) throws {
        let exit = worker?.wait(upTo: 5)
        worker = nil
        let reason = exit.map { "\($0)" } ?? "worker lost"
        log.warning("worker died during job", metadata: ["exit": "\(reason)"])
        try fail(job, .retryable(reason), log)
    }

    private func finish(_ job: ClaimedJob, reply frame: Data, started: DispatchTime, _ log: Logger) throws {
        guard let reply = try? JSONDecoder().decode(JobReply.self, from: frame), reply.jobId == job.jobId else {
            // The worker's stream can no longer be trusted to be in sync.
            _ = killWorker()
            try fail(job, .retryable("worker sent a malformed reply"), log)
            return
        }
        _ = try outcomes.record(reply, for: LeasedJob(job), started: started, log)
    }

    private func fail(_ job: ClaimedJob, _ failure: JobFailure, _ log: Logger) throws {
        try outcomes.fail(LeasedJob(job), failure, log)
    }
}

func formatSeconds(_ s: Double) -> String {
    s == s.rounded() ? "\(Int(s))s" : String(format: "%.1fs", s)
}
