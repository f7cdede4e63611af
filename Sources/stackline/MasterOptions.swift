import ArgumentParser
import Foundation
import Grouping
import Storage
import Master
import APIModel
import WorkerProtocol

/// The master's options, shared by `stackline master` and `stackline serve` (which runs a master).
struct MasterOptions: ParsableArguments {
    // Optional so --help shows "the number of cores" rather than this machine's count.
    @Option(help: "Worker processes (default: the number of cores).")
    var workers: Int?

    @Option(help: "Seconds a job may run before its worker is killed and the job retried.")
    var jobTimeout: Double = 60

    @Option(help: "Attempts before a job that keeps failing is quarantined as failed.")
    var maxAttempts = 3

    @Option(help: "Lease length in seconds; renewed while a job runs.")
    var lease: Double = 30

    @Option(help: "Backoff after the first failed attempt, in seconds; doubles per attempt, plus jitter.")
    var retryDelay: Double = 1

    @Option(help: "Seconds in-flight jobs get after SIGTERM/SIGINT before their leases are released.")
    var drain: Double = 20

    @Option(help: "The most jobs each local worker slot holds at once: the running one, the next (already sent to the worker) and those waiting (1 to 64; within it, as many as its worker runs in about 20 ms).")
    var prefetch: Int = MasterConfiguration.defaultPrefetch

    // Tests hold prefetched jobs behind a hung one; not an operator's setting.
    @Option(help: .hidden)
    var handBackAfter: Double = 1

    @Option(help: "Nice value of the local workers (0-19; default 0 for master, 10 for serve). Above 0, the master (and serve's request handling) gets the CPU as soon as it needs it: a burst of uploads is answered first while the queue absorbs the backlog.")
    var workerNice: Int32?

    @Option(help: "Grouping rules file for the workers (default: $STACKLINE_GROUPING_RULES or the built-in rules).")
    var groupingRules: String?

    @Option(help: "Automatic retention: prune reports received longer ago than this (30m, 24h, 90d, 2w) at start and every --retain-interval, as `stackline prune` does.")
    var retain: SinceDate?

    @Option(help: "Seconds between two --retain passes.")
    var retainInterval: Double = 3600

    /// Passed on to every worker.
    @OptionGroup var store: StoreOptions

    /// Upstream debuginfod servers asked for what processed reports lacked.
    @OptionGroup var sources: SymbolSourceOptions

    /// Checks shared by both commands (`--workers` bounds are each command's own).
    func validate() throws {
        guard maxAttempts >= 1 else { throw ValidationError("--max-attempts must be at least 1") }
        guard jobTimeout > 0, lease > 0, retryDelay >= 0, drain >= 0, handBackAfter >= 0 else {
            throw ValidationError("--job-timeout and --lease must be positive; --retry-delay and --drain not negative")
        }
        if let retain, retain.duration == nil {
            throw ValidationError("--retain takes a duration such as 90d, not a date")
        }
        guard (1...ServiceDatabase.maxClaimBatch).contains(prefetch) else {
            throw ValidationError("--prefetch must be between 1 and \(ServiceDatabase.maxClaimBatch)")
        }
        guard retainInterval > 0 else { throw ValidationError("--retain-interval must be positive") }
        guard (0...19).contains(workerNice ?? 0) else { throw ValidationError("--worker-nice must be between 0 and 19") }
        // Workers inherit the limit: a bad value must stop the master, not every worker.
        do { _ = try processEnvironment.maxFrame() } catch { throw ValidationError(error.description) }
    }

    /// The master's configuration; checks the grouping rules and the worker executable first,
    /// so a mistake fails once, loudly, instead of in every worker.
    func configuration(command: String, once: Bool = false) throws -> MasterConfiguration {
        // Workers are told the file with --grouping-rules; check it here so a bad one fails once, loudly.
        let groupingRulesPath = groupingRules ?? processEnvironment.groupingRules
        if let groupingRulesPath {
            do { _ = try GroupingRules.load(path: groupingRulesPath) } catch {
                throw fail("stackline \(command): \(error.description)")
            }
        }
        var config = MasterConfiguration(
            workers: workers ?? ProcessInfo.processInfo.activeProcessorCount, once: once, jobTimeout: jobTimeout,
            retry: RetryPolicy(maxAttempts: maxAttempts, baseDelayMs: Int64(retryDelay * 1000)),
            leaseSeconds: lease, drainSeconds: drain,
            workerExecutable: MasterConfiguration.locateWorker(override: processEnvironment.worker),
            workerArguments: ["--symbols", store.store.root] + (groupingRulesPath.map { ["--grouping-rules", $0] } ?? []),
            retainMs: retain?.duration, retentionIntervalSeconds: retainInterval)
        config.prefetch = prefetch
        config.groupingRulesPath = groupingRulesPath
        if let fetcher = try sources.fetcher(store: store.store, command: command) {
            config.symbolSources = fetcher
            // Local workers search the fetched files after the store: an upload wins. Reports
            // name the two by role (`imageSymbols[].searched`), not by the server's paths.
            config.workerArguments += [
                "--symbols", fetcher.cache.directory, "--store-name", "symbol store", "--store-name", "symbol sources' cache",
            ]
        }
        config.handBackSeconds = handBackAfter
        // serve puts request handling first; a standalone master has nothing to put first, and
        // its workers at 10 waited behind the committer and the slots (slower in
        // scripts/bench-queue.sh on 30-frame reports; docs/performance.md).
        config.workerNiceness = workerNice ?? (command == "serve" ? 10 : 0)
        if command == "serve" {
            config.dispatchNiceness = config.workerNiceness
            config.completionBatch = 8
        }
        guard FileManager.default.isExecutableFile(atPath: config.workerExecutable) else {
            throw fail("stackline \(command): no worker executable at \(config.workerExecutable) (set STACKLINE_WORKER)")
        }
        return config
    }
}
