import Dispatch
import Foundation
import Storage
import Logging
import Metrics
internal import ServiceRuntime
internal import WorkerProtocol

/// A leased job as the master knows it when an outcome arrives: from its own claim (local
/// slot), or only from the fencing token a remote worker sends back (after a master restart
/// the master knows nothing more about it).
struct LeasedJob: Sendable {
    var jobId: Int64
    var leaseToken: Int64
    var reportId: Int64?
    var attempts: Int?
    var format: String?

    init(_ job: ClaimedJob) {
        jobId = job.jobId
        leaseToken = job.leaseToken
        reportId = job.reportId
        attempts = job.attempts
        format = job.format
    }

    init(jobId: Int64, leaseToken: Int64, reportId: Int64?) {
        self.jobId = jobId
        self.leaseToken = leaseToken
        self.reportId = reportId
    }
}

/// What recording an outcome did.
enum RecordedOutcome: Sendable, Equatable {
    case stored
    case failureRecorded
    /// The lease was no longer current: nothing was written (the fencing token refused it).
    case stale
}

/// An outcome being recorded: a completion waiting for its batch to commit, or an outcome
/// already written. `wait()` gives it; a slot collects it while its worker runs the next job.
struct PendingOutcome: Sendable {
    private let ticket: Ticket<RecordedOutcome>?
    private let recorded: RecordedOutcome?

    init(committing ticket: Ticket<RecordedOutcome>) {
        self.ticket = ticket
        recorded = nil
    }

    init(recorded: RecordedOutcome) {
        ticket = nil
        self.recorded = recorded
    }

    /// The outcome; throws what kept the completion from being written (a database error).
    func wait() throws -> RecordedOutcome {
        if let recorded { return recorded }
        guard let ticket else { return .stale }
        return try ticket.wait()
    }

    /// Whether `wait()` would return at once.
    var isAnswered: Bool { ticket?.isAnswered ?? true }
}

/// The one place a worker's reply becomes a database outcome, for local slots and remote
/// workers alike: the same checks, the same retry rules, the same log lines and metrics.
/// Results go through the master's one `CompletionCommitter`, so completions from every slot
/// and remote worker share transactions; failures are rare and are written at once.
struct JobOutcomes: Sendable {
    let db: any JobLeasing
    let completions: CompletionCommitter
    let retry: RetryPolicy
    /// Hears the build ids a stored result lacked (the symbol sources' fetcher).
    var symbolSources: SymbolSourceFetcher? = nil

    /// Records `reply` (already decoded and matched to the job) for `job` and waits for it.
    func record(_ reply: JobReply, for job: LeasedJob, started: DispatchTime?, _ log: Logger) throws -> RecordedOutcome {
        try begin(reply, for: job, started: started, log).wait()
    }

    /// Starts recording `reply` for `job`: a result is queued for the next completion batch
    /// (its "job done" line and metrics follow its commit); anything else is written now.
    func begin(_ reply: JobReply, for job: LeasedJob, started: DispatchTime?, _ log: Logger) throws -> PendingOutcome {
        switch reply.kind {
        case .result:
            guard let stored = reply.result, stored.isIntact else {
                return PendingOutcome(recorded: try fail(job, .retryable(
                    reply.result == nil ? "worker reply has no report" : "worker reply's report does not inflate to its stated size"), log))
            }
            let result = JobResult(
                compressedJSON: stored.compressed, jsonSize: stored.size, status: stored.status, group: reply.group,
                missingImages: stored.missing)
            let counts = stored.counts
            let lacked = stored.missing.map(\.buildID)
            let sources = lacked.isEmpty ? nil : symbolSources
            let (format, attempts) = (job.format, job.attempts)
            let recorded = Ticket<RecordedOutcome>()
            _ = completions.enqueue(Completion(jobId: job.jobId, token: job.leaseToken, result: result)) { committed in
                switch committed {
                case .failure(let error):
                    recorded.fulfil(.failure(error))
                case .success(.stale):
                    log.warning("lease lost before completion; result discarded")
                    recorded.fulfil(.success(.stale))
                case .success(.stored):
                    let nanoseconds = started.map { DispatchTime.now().uptimeNanoseconds - $0.uptimeNanoseconds }
                    JobMetrics.done(nanoseconds: nanoseconds, symbolicated: counts.symbolicated, missing: counts.missing)
                    var metadata: Logger.Metadata = [
                        "frames": "\(counts.frames)", "symbolicated": "\(counts.symbolicated)", "missing": "\(counts.missing)",
                    ]
                    if let format { metadata["format"] = "\(format)" }
                    if let attempts { metadata["attempt"] = "\(attempts)" }
                    if let nanoseconds { metadata["ms"] = "\(nanoseconds / 1_000_000)" }
                    // Logged on the committer's thread the moment the result is durable, so a
                    // master killed right after still has a line for every stored result.
                    log.info("job done", metadata: metadata)
                    // After the commit: the requeue a fetched file causes must find this report.
                    sources?.want(lacked)
                    recorded.fulfil(.success(.stored))
                }
            }
            return PendingOutcome(committing: recorded)
        case .inputError:
            return PendingOutcome(recorded: try fail(job, .permanent("input error: \(reply.message ?? "unparseable report")"), log))
        case .internalError:
            return PendingOutcome(recorded: try fail(job, .retryable("worker error: \(reply.message ?? "unknown")"), log))
        case .permanentError:
            return PendingOutcome(recorded: try fail(job, .permanent(reply.message ?? "worker error that cannot be retried"), log))
        case .workerLost:
            return PendingOutcome(recorded: try fail(job, .retryable(reply.message ?? "worker lost"), log))
        }
    }

    /// Records a failed attempt; a stale lease records nothing.
    @discardableResult
    func fail(_ job: LeasedJob, _ failure: JobFailure, _ log: Logger) throws -> RecordedOutcome {
        do {
            switch try db.fail(jobId: job.jobId, token: job.leaseToken, failure: failure, policy: retry) {
            case .retryScheduled(let runAfter, let attempts):
                let delay = Double(runAfter - db.now()) / 1000
                log.warning(
                    "job attempt failed; retry scheduled",
                    metadata: ["attempt": "\(attempts)", "retryIn": "\(formatSeconds(delay))", "reason": "\(failure)"])
            case .failed(let reason):
                log.error("job failed", metadata: ["attempt": "\(job.attempts.map(String.init) ?? "?")", "reason": "\(reason)"])
            }
            return .failureRecorded
        } catch StorageError.staleLease {
            log.warning("lease lost before recording failure", metadata: ["reason": "\(failure)"])
            return .stale
        }
    }
}

/// What each finished job adds to `/metrics` (no-ops without a metrics backend).
enum JobMetrics {
    static let latency = Timer(label: "stackline_job_duration_seconds", preferredDisplayUnit: .seconds)
    static let framesSymbolicated = Counter(label: "stackline_frames_total", dimensions: [("status", "symbolicated")])
    static let framesMissing = Counter(label: "stackline_frames_total", dimensions: [("status", "missing")])

    static func done(nanoseconds: UInt64?, symbolicated: Int, missing: Int) {
        if let nanoseconds { latency.recordNanoseconds(Int64(clamping: nanoseconds)) }
        framesSymbolicated.increment(by: symbolicated)
        framesMissing.increment(by: missing)
    }
}
