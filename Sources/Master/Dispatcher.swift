#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import Storage
import Logging
import SystemCalls
internal import ServiceRuntime
internal import WorkerProtocol

/// `stackline master`: recovers expired leases, runs one `WorkerSlot` thread per worker,
/// keeps recovering leases while it runs, and drains on SIGTERM/SIGINT.
/// Sendable: `signalSources`, its one mutable field, is touched only by the thread in `run()` (installed at the start, cancelled at the end); the rest is immutable or locks itself (`StopFlag`, `WorkerCensus`).
public final class Dispatcher: @unchecked Sendable {
    private let db: any ServiceStore
    private let config: MasterConfiguration
    private let logger: Logger
    private let stop = StopFlag()
    private var signalSources: [DispatchSourceSignal] = []
    /// Live worker processes and restarts, for readiness checks and metrics.
    public let census = WorkerCensus()
    /// Workers on other machines (`stackline serve` only); their rows are flushed from this loop.
    private let remote: RemoteWorkerPool?
    /// The one completion writer of this master: local slots and remote workers share its
    /// transactions (the remote pool's, when there is one).
    private let completions: CompletionCommitter

    public init(db: any ServiceStore, config: MasterConfiguration, logger: Logger, remote: RemoteWorkerPool? = nil) {
        self.db = db
        self.config = config
        self.logger = logger
        self.remote = remote
        completions = remote?.completions ?? config.completionCommitter(store: db)
    }

    /// Runs until stopped (or, with `once`, until the queue is drained). Throws the first
    /// error that stopped a slot, after the other slots have wound down.
    public func run() throws {
        SystemCall.ignoreBrokenPipes()
        if config.handlesSignals { installStopSignals() }

        let recovered = try db.recoverExpiredLeases(maxAttempts: config.retry.maxAttempts)
        if recovered.requeued + recovered.failed > 0 {
            logger.notice("recovered expired leases", metadata: ["requeued": "\(recovered.requeued)", "failed": "\(recovered.failed)"])
        }
        logger.info("master started", metadata: ["workers": "\(config.workers)", "db": "\(db.location)", "once": "\(config.once)"])
        // The first pass runs before any worker, so the one full VACUUM an older database
        // needs to switch to incremental auto-vacuum holds up no job of ours.
        var nextRetention = runRetention(reclaim: .convertIfNeeded)

        let errors = ErrorBox()
        let group = DispatchGroup()
        // Apart from the slots' group: the slots ending (`--once`) is the end, whatever it asks.
        let fetching = DispatchGroup()
        if let sources = config.symbolSources {
            fetching.enter()
            let thread = Thread { [db, stop] in
                defer { fetching.leave() }
                sources.run(db: db, stop: stop)
            }
            thread.name = "symbol-sources"
            thread.start()
        }
        for i in 0..<config.workers {
            group.enter()
            let thread = Thread { [db, completions, config, stop, census, logger] in
                defer { group.leave() }
                var outages = 0
                while !stop.isSet {
                    let slot = WorkerSlot(index: i, db: db, completions: completions, config: config, stop: stop, census: census, logger: logger)
                    do {
                        try slot.run()
                        return
                    } catch let error as StorageError where error.isUnavailable {
                        // A database server restarting or out of reach (PostgreSQL) is waited
                        // out: the slot starts again when it answers. Jobs it held come back by
                        // lease expiry; their late results are refused by the fencing token.
                        outages += 1
                        let waitMs = Self.outageBackoff.baseDelay(afterAttempt: outages)
                        logger.warning(
                            "worker slot waits for the database", metadata: ["slot": "\(i)", "error": "\(error)", "retryMs": "\(waitMs)"])
                        stop.wait(upTo: Double(waitMs) / 1000)
                    } catch {
                        logger.error("worker slot stopped", metadata: ["slot": "\(i)", "error": "\(error)"])
                        errors.record(error)
                        stop.set()
                        return
                    }
                }
            }
            thread.name = "worker-slot-\(i)"
            thread.start()
        }

        // Leases of a master killed with -9 expire while we run too; requeue them as they do.
        // Remote workers' rows are written as often, so `stackline workers` is that fresh.
        let recoveryInterval = max(0.5, min(2, config.leaseSeconds / 2))
        while true {
            if group.wait(timeout: .now() + recoveryInterval) == .success {
                // Without local workers (`serve --workers 0`) the master still recovers leases
                // until it is stopped; with workers, the slots ending is the end.
                if config.workers > 0 || stop.isSet { break }
                stop.wait(upTo: recoveryInterval)
            }
            remote?.flush()
            if stop.isSet { continue }
            if let due = nextRetention, Date() >= due {
                nextRetention = runRetention(reclaim: .incrementalOnly)
            }
            do {
                let r = try db.recoverExpiredLeases(maxAttempts: config.retry.maxAttempts)
                if r.requeued + r.failed > 0 {
                    logger.notice("recovered expired leases", metadata: ["requeued": "\(r.requeued)", "failed": "\(r.failed)"])
                }
            } catch {
                logger.error("lease recovery failed", metadata: ["error": "\(error)"])
            }
        }
        signalSources.forEach { $0.cancel() }
        if config.retainMs != nil { try? db.release(.retention, for: .current) }
        // A fetch under way ends within its source's timeout.
        stop.set()
        fetching.wait()
        logger.info("master stopped")
        if let error = errors.first { throw error }
    }

    /// How long a slot waits before trying a database that could not be reached again.
    static let outageBackoff = Backoff(initialMs: 200, maxMs: 5_000, jitter: 100...100)

    /// One retention pass (`--retain`), logged; returns when the next is due, nil without
    /// retention. A failed pass is logged and tried again at the next interval: retention
    /// must never stop the queue.
    private func runRetention(reclaim: ReclaimPolicy) -> Date? {
        guard let retainMs = config.retainMs else { return nil }
        let next = Date().addingTimeInterval(config.retentionIntervalSeconds)
        let started = DispatchTime.now()
        do {
            // One node of those sharing the database prunes (`Singleton.retention`); its hold
            // outlasts two intervals, so a pass that runs long keeps it, and a dead node's
            // turn passes to another within that time.
            let leaseMs = Int64(config.retentionIntervalSeconds * 2_000) + 60_000
            guard try db.hold(.retention, for: .current, ttlMs: leaseMs) else {
                logger.debug("retention: another node prunes")
                return next
            }
            let o = try db.prune(PruneRequest(receivedBefore: db.now() - retainMs, reclaim: reclaim))
            let ms = (DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000
            logger.notice(
                "retention: pruned reports older than \(formatDuration(milliseconds: retainMs))",
                metadata: [
                    "reports": "\(o.reportsDeleted)", "jobs": "\(o.jobsDeleted)", "results": "\(o.resultsDeleted)",
                    "groupsDeleted": "\(o.groupsDeleted)", "groupsUpdated": "\(o.groupsUpdated)",
                    "keptActive": "\(o.keptActive)", "vacuum": "\(o.vacuum.rawValue)",
                    "bytesBefore": "\(o.bytesBefore)", "bytesAfter": "\(o.bytesAfter)", "ms": "\(ms)",
                ])
        } catch {
            logger.error("retention failed", metadata: ["error": "\(error)"])
        }
        return next
    }

    /// Starts the drain, as SIGTERM does to `stackline master`: no new claims, in-flight jobs
    /// get `drainSeconds`, then `run()` returns.
    public func stop(reason: String = "stopping") {
        if !stop.isSet {
            logger.notice("\(reason): no new claims; in-flight jobs have \(formatSeconds(config.drainSeconds)) to finish")
        }
        stop.set()
    }

    private func installStopSignals() {
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [weak self] in self?.stop() }
            source.resume()
            signalSources.append(source)
        }
    }
}

/// `90d`, `36h`, `15m` or `20s`: the largest unit that divides the duration.
func formatDuration(milliseconds ms: Int64) -> String {
    for (unit, size) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)] where ms % size == 0 {
        return "\(ms / size)\(unit)"
    }
    return "\(ms)ms"
}

/// Sendable: `lock` guards `errors`.
private final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [Error] = []
    func record(_ e: Error) { lock.withLock { errors.append(e) } }
    var first: Error? { lock.withLock { errors.first } }
}
