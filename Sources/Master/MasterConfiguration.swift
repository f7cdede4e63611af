import Foundation
import Storage

/// Settings of one `stackline master` run.
public struct MasterConfiguration: Sendable {
    public var workers: Int
    /// Exit once no job is queued or running (backoffs included).
    public var once: Bool
    /// A job running longer than this gets its worker killed and is retried.
    public var jobTimeout: Double
    public var retry: RetryPolicy
    /// Lease length; heartbeats renew it at a third of this.
    public var leaseSeconds: Double
    /// After SIGTERM/SIGINT, how long in-flight jobs may take before their leases are released.
    public var drainSeconds: Double
    public var workerExecutable: String
    public var workerArguments: [String]
    /// Sleep between claims when nothing is runnable.
    public var idlePollSeconds: Double
    /// Automatic retention: prune reports older than this many milliseconds at start and every
    /// `retentionIntervalSeconds`; nil keeps everything.
    public var retainMs: Int64?
    public var retentionIntervalSeconds: Double
    /// Whether the dispatcher installs its own SIGTERM/SIGINT handlers (`stackline master`);
    /// `stackline serve` leaves signals to swift-service-lifecycle and calls `Dispatcher.stop()`.
    public var handlesSignals: Bool
    /// The most jobs a local slot holds at once (running, sent ahead to its worker, waiting),
    /// and so the most one claim statement leases. Within it the slot holds what its worker
    /// runs in `JobPace.budgetSeconds` at its recent pace. Bounded by `ServiceDatabase.maxClaimBatch`.
    public var prefetch: Int = MasterConfiguration.defaultPrefetch
    /// 64: on 30-frame reports a slot then holds a few milliseconds of work (scripts/bench-queue.sh), which
    /// outlasts the committer's batches a claim waits behind (fewer held left a worker idle
    /// behind every one); slower jobs are held fewer at a time by the pace, and are handed
    /// back after a second behind a slow job.
    public static let defaultPrefetch = 64
    /// How long a slot's running job may take before the jobs waiting behind it are handed back
    /// for other slots: a short job keeps its successors, a slow one (debug files to index, a
    /// hang) does not make them wait. The remote workers' slot feeder uses the same second.
    public var handBackSeconds: Double = 1
    /// Nice value given to each worker process (0: the master's own). `stackline serve` lowers
    /// its workers (`--worker-nice`, default 10 there) so request handling keeps the CPU under
    /// load while the queue takes the backlog; `stackline master` has nothing to put first and
    /// leaves them at 0.
    public var workerNiceness: Int32 = 0
    /// Nice value of the dispatcher's own threads (the slots, their claims, the committer).
    /// `serve` gives them its workers' value: draining the queue then waits behind request
    /// handling, as the workers do (at 0 they took the CPU from uploads: fewer accepted
    /// reports/s in scripts/bench-serve.sh; docs/performance.md).
    public var dispatchNiceness: Int32 = 0
    /// The most results one completion transaction commits. 64 for `master`: fewer, larger
    /// transactions. `serve` takes 8: its uploads wait for the same write lock, and behind 64
    /// results they were answered markedly slower, and 4 drained less (scripts/bench-serve.sh;
    /// the figures are in docs/performance.md).
    public var completionBatch = 64
    /// The grouping rules file workers use (`--grouping-rules`, else `STACKLINE_GROUPING_RULES`);
    /// nil, the built-in rules. Local workers get it in `workerArguments`; `serve` sends the
    /// file to remote workers.
    public var groupingRulesPath: String?
    /// The upstream symbol sources (`--symbol-source`): what processed reports lacked is asked
    /// of them in the background. Nil: none configured.
    public var symbolSources: SymbolSourceFetcher?

    /// The master's one completion writer, as this configuration sizes and prioritises it (the
    /// dispatcher's, or the remote pool's when `serve` has one: they share it).
    func completionCommitter(store: any JobLeasing) -> CompletionCommitter {
        CompletionCommitter(store: store, maxBatch: completionBatch, niceness: dispatchNiceness)
    }

    public init(
        workers: Int, once: Bool = false, jobTimeout: Double = 60, retry: RetryPolicy = RetryPolicy(),
        leaseSeconds: Double = 30, drainSeconds: Double = 20, workerExecutable: String,
        workerArguments: [String] = [], idlePollSeconds: Double = 0.1, retainMs: Int64? = nil,
        retentionIntervalSeconds: Double = 3600, handlesSignals: Bool = true
    ) {
        self.workers = workers
        self.once = once
        self.jobTimeout = jobTimeout
        self.retry = retry
        self.leaseSeconds = leaseSeconds
        self.drainSeconds = drainSeconds
        self.workerExecutable = workerExecutable
        self.workerArguments = workerArguments
        self.idlePollSeconds = idlePollSeconds
        self.retainMs = retainMs
        self.retentionIntervalSeconds = retentionIntervalSeconds
        self.handlesSignals = handlesSignals
    }

    /// `override` (`STACKLINE_WORKER`), else `stackline-worker` next to the running executable.
    public static func locateWorker(override: String?) -> String {
        if let path = override, !path.isEmpty { return path }
        let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        return ((me as NSString).deletingLastPathComponent as NSString).appendingPathComponent("stackline-worker")
    }
}
