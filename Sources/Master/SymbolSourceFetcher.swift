import Foundation
import Logging
import ReportModel
import Storage
import SymbolFetch
import SymbolStore
internal import ServiceRuntime

/// The master's upstream symbol sources at work (`--symbol-source`): build ids that processed
/// reports lacked are asked of the sources in order, in the background, and a file that
/// arrives requeues the reports that needed it, as an upload does.
///
/// Why after the job rather than before it: the slots' job loop never waits on a network it
/// does not control (a source that is down would hold every slot for its timeout), and the
/// reprocessing path is the one an upload already takes. The cost is one more pass for the
/// first report of a build whose files only a source has; every later report finds the file
/// in the cache (`FetchedDebugFiles`, which local workers search as a store after the main
/// one, and the debuginfod endpoint serves to remote workers).
///
/// One thread (`run`) asks; `want` only queues, so completions never wait for it. The queue
/// holds each id once and at most `maxQueued` ids; past that, new ids wait for the next report
/// that lacks them.
/// Sendable: `condition` guards `queue`, `queued` and `requeuedFromCache`; the rest is immutable.
public final class SymbolSourceFetcher: @unchecked Sendable {
    public let cache: FetchedDebugFiles
    private let logger: Logger
    public static let maxQueued = 10_000
    /// Ids asked for at once (each source's own concurrency limit applies within).
    static let batch = 16

    private let condition = NSCondition()
    private var queue: [BuildID] = []
    private var queued: Set<BuildID> = []
    /// Ids already in the cache that a report still lacked (its job ran while the file was
    /// being fetched): their reports are requeued once per id, not on every report, so a file
    /// that is in the cache but unusable cannot requeue reports forever.
    private var requeuedFromCache: Set<BuildID> = []

    /// The fetched files as a store: searched after the main one (workers, debuginfod endpoint).
    public var fetchedStore: SymbolStoreDirectory { cache.store }

    public init(cache: FetchedDebugFiles, logger: Logger) {
        self.cache = cache
        self.logger = logger
    }

    /// Queues `ids` to be asked of the sources; returns at once.
    public func want(_ ids: [BuildID]) {
        guard !ids.isEmpty else { return }
        condition.withLock {
            for id in ids where !id.isUnknown && queued.count < Self.maxQueued && queued.insert(id).inserted {
                queue.append(id)
            }
            condition.signal()
        }
    }

    /// Asks for what is queued until `stop` is set. At start it queues the ids that stored
    /// reports lack (the most recently needed first), so reports processed before the sources
    /// were configured, or before a restart, are fetched for too.
    func run(db: any SQLStore, stop: StopFlag) {
        do {
            let lacked = try db.lackedBuildIds(limit: Self.maxQueued)
            // The misses recorded before a restart still count for their time.
            let sources = Dictionary(cache.sources.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            for (id, answers) in try db.sourceAnswers(buildIds: lacked) {
                for answer in answers where answer.outcome == .notFound || answer.outcome == .refused {
                    sources[answer.source]?.rememberMiss(id, answeredAt: answer.answeredAt)
                }
            }
            want(lacked)
        } catch {
            logger.error("symbol sources: cannot read the build ids stored reports lack", metadata: ["error": "\(error)"])
        }
        while !stop.isSet {
            let next: [BuildID] = condition.withLock {
                if queue.isEmpty { _ = condition.wait(until: Date().addingTimeInterval(0.5)) }
                let taken = Array(queue.prefix(Self.batch))
                queue.removeFirst(taken.count)
                taken.forEach { queued.remove($0) }
                return taken
            }
            if next.isEmpty {
                cache.trim()
                continue
            }
            settle(next, db: db)
        }
    }

    private func settle(_ ids: [BuildID], db: any SQLStore) {
        let pin = cache.ensure(ids)
        // The files stay in the cache; nothing here reads them.
        pin.release()
        let answers = pin.answers.flatMap { id, said in said.map { (buildID: id, answer: $0) } }
        do { try db.recordSourceAnswers(answers) } catch {
            logger.error("symbol sources: cannot record the sources' answers", metadata: ["error": "\(error)"])
        }
        let fetched = Set(pin.answers.filter { $0.value.contains { $0.outcome == .found } }.keys)
        let late = condition.withLock { pin.pinned.filter { !fetched.contains($0) && requeuedFromCache.insert($0).inserted } }
        let arrived = pin.pinned.filter { fetched.contains($0) } + late
        for (id, said) in pin.answers.sorted(by: { $0.key < $1.key }) {
            for answer in said where answer.outcome != .found {
                logger.info(
                    "symbol source did not give the file",
                    metadata: ["buildId": "\(id)", "source": "\(answer.source)", "outcome": "\(answer.outcome.rawValue)", "detail": "\(answer.detail)"])
            }
        }
        guard !arrived.isEmpty else { return }
        do {
            let requeued = try db.requeueReports(missing: arrived)
            logger.notice(
                "symbol sources: debug files fetched; reports that lacked them requeued",
                metadata: ["buildIds": "\(arrived.map(\.hex).joined(separator: " "))", "reports": "\(requeued.count)"])
        } catch {
            logger.error("symbol sources: cannot requeue the reports that lacked the fetched files", metadata: ["error": "\(error)"])
        }
    }
}
