#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ReportModel
import ServiceClient
import SymbolStore
import SystemCalls

/// A remote worker's debug files: fetched from the master's debuginfod endpoint
/// (`GET /buildid/HEX/debuginfo`, else `…/executable`) into a directory in the store layout,
/// each checked by build-id, kept under a byte capacity by evicting the least recently used.
///
/// - **Layout.** The directory is a `SymbolStoreDirectory`: a download goes to `.fetching/`
///   inside it (same disk, never `/tmp`), then through `addFile(path:)`, which reads the file's
///   own build-id and stores it under that id. The file is kept only when that id is the one
///   asked for; anything else the server sent is removed and counted as a mismatch. The
///   symbolicator reads the directory as one more store (`Symbolicator(stores:)`).
/// - **Single flight.** One download per build-id at a time: callers asking for an id being
///   fetched wait for that fetch and share its outcome. Different ids fetch in parallel, also
///   within one `ensure` (up to `parallelFetches` at once).
/// - **Remembered answers.** An id the server does not have (404 for both roles), or answered
///   with a wrong file, is not asked for again for `notFoundRetention`: a report listing 300
///   system images costs 600 requests once, not per job. A transport error or another status
///   (401, 5xx) is not remembered.
/// - **Eviction.** After each added file, while the entries' bytes (both roles and the sidecar,
///   `SymbolStoreDirectory.storedBytes`) exceed the capacity, the least recently used entry
///   that no `FetchPin` holds is removed (`remove(buildID:)`).
/// - **Recency survives a restart**: it is the sidecar's (`ab/cdef….json`) modification time,
///   set with `utimensat` each time an entry is added or used; the scan at start reads it back.
///   Stamps are strictly increasing (nanoseconds, at least one more than the last), so two
///   uses in the same clock tick keep their order.
///
/// Thread-safe; every method blocks, and `logger` is called from any of the calling threads.
/// Call it from threads of your own (a worker's slot threads), not from Dispatch queues or
/// Swift concurrency tasks: `ServiceClient` blocks its caller while URLSession works on
/// Dispatch's pool, which on Linux is only as large as the core count, so callers that fill
/// that pool wait forever. Parallel fetches within one `ensure` run on threads it starts.
/// One instance per process and directory: the accounting is in memory, and two processes
/// sharing a directory would each count only their own files.
/// Sendable: `condition` guards the accounting (`entries`, `total`, `pins`, `flights`, `remembered`, `lastStamp`, `pendingLog`, `counts`); the rest is immutable after init.
public final class FetchedDebugFiles: @unchecked Sendable {
    /// The cache directory, in the store layout.
    public let directory: String
    public let capacityBytes: Int64
    /// Stores whose files are used as they are, never fetched (`--symbols`).
    public let localStores: [SymbolStoreDirectory]
    /// The cache directory as a store: what the symbolicator searches after the local stores.
    public let store: SymbolStoreDirectory
    /// How long a 404 (or a wrong file) is believed before the server is asked again.
    public let notFoundRetention: Duration
    /// Downloads one `ensure` runs at once.
    public static let parallelFetches = 4

    /// Asked in order for an id no local store holds and the cache lacks.
    public let sources: [SymbolSource]
    /// Entries unused for longer than this are removed (nil: only the capacity bounds them).
    public let maxAge: Duration?
    private let logger: ((String) -> Void)?
    /// Where downloads land before the store takes them (`.fetching/`, emptied at start).
    private let incoming: String

    private struct Entry {
        var bytes: Int64
        /// Nanoseconds since 1970: the sidecar's modification time.
        var lastUsed: Int64
    }

    /// One download in progress; callers that want the same id wait for its result.
    private final class Flight {
        var result: Result<Void, SymbolFetchError>?
    }

    /// What one download came to, before it is recorded.
    private enum Fetched {
        /// A file was added to the store (perhaps under another id than the one asked for).
        case added([AddOutcome], request: String)
        case notOnServer
        /// Every source's answer was final and one sent a wrong file (not a debug file of the
        /// id): remembered.
        case refused(SymbolFetchError)
        /// No usable answer this time: not remembered.
        case failed(SymbolFetchError)
    }

    // Everything below is guarded by `condition`.
    private let condition = NSCondition()
    private var entries: [BuildID: Entry] = [:]
    private var total: Int64 = 0
    private var pins: [BuildID: Int] = [:]
    private var flights: [BuildID: Flight] = [:]
    private var remembered: [BuildID: (until: ContinuousClock.Instant, error: SymbolFetchError)] = [:]
    private var lastStamp: Int64 = 0
    private var pendingLog: [String] = []
    private var counts = Counters()

    /// The counters of the worker's status report.
    public struct Counters: Sendable, Equatable {
        /// Files downloaded (200 answers), kept or not.
        public var fetches = 0
        /// HTTP requests made.
        public var requests = 0
        /// Ids the server had in neither role.
        public var notOnServer = 0
        /// Downloads refused because they were not the file of the requested id.
        public var mismatches = 0
        /// Fetches that failed without an answer to remember (transport, other statuses, disk).
        public var failures = 0
        /// Callers that found another caller downloading the same id and waited for that download.
        public var sharedDownloads = 0
        /// Entries removed to stay under the capacity.
        public var evictions = 0
    }

    /// Creates `directory` (and its parents) when missing and takes stock of what it already
    /// holds: each entry's size and last use. A cache over its capacity (a smaller
    /// `--cache-size` than last time) is trimmed at once.
    /// One source, reached with `client` (a remote worker's master): a transport error or
    /// another status is never held against it (no backoff), so the next job asks again.
    public convenience init(
        directory: String, capacityBytes: Int64, client: ServiceClient, localStores: [SymbolStoreDirectory],
        logger: ((String) -> Void)? = nil, notFoundRetention: Duration = .seconds(60)
    ) throws(SymbolFetchError) {
        try self.init(
            directory: directory, capacityBytes: capacityBytes,
            sources: [SymbolSource(client: client, rememberMisses: notFoundRetention, retryDelay: { _ in .zero })],
            localStores: localStores, logger: logger, notFoundRetention: notFoundRetention)
    }

    public init(
        directory: String, capacityBytes: Int64, maxAge: Duration? = nil, sources: [SymbolSource],
        localStores: [SymbolStoreDirectory], logger: ((String) -> Void)? = nil, notFoundRetention: Duration = .seconds(60)
    ) throws(SymbolFetchError) {
        guard capacityBytes > 0 else { throw .invalidCapacity(capacityBytes) }
        self.directory = directory
        self.capacityBytes = capacityBytes
        self.maxAge = maxAge
        self.sources = sources
        self.localStores = localStores
        self.logger = logger
        self.notFoundRetention = notFoundRetention
        // The limits of the store the files would otherwise be uploaded to.
        store = SymbolStoreDirectory(root: directory, limits: localStores.first?.limits ?? StoreLimits())
        incoming = directory + "/.fetching"
        // The cache and its `.fetching` folder, owner only (PrivateFiles).
        do throws(SystemCallError) { try PrivateFiles.makeDirectory(incoming) } catch {
            throw .cacheDirectory(path: directory, reason: "cannot create \(incoming): \(error.reason)")
        }
        try removeLeftoverDownloads()
        for entry in store.list() {
            let sidecar = store.sidecarPath(buildID: entry.buildId)
            var info = stat()
            do { try SystemCall.check("lstat", path: sidecar) { lstat(sidecar, &info) } } catch { continue }
            let used = info.modifiedNanoseconds
            let bytes = store.storedBytes(buildID: entry.buildId)
            entries[entry.buildId] = Entry(bytes: bytes, lastUsed: used)
            total += bytes
            lastStamp = max(lastStamp, used)
        }
        condition.withLock { evictOverCapacity() }
        flushLog()
    }

    // MARK: Status

    /// The build-ids the cache holds, in order.
    public var heldBuildIds: [BuildID] { condition.withLock { entries.keys.sorted() } }
    /// Bytes the cache's entries take (both roles and the sidecar of each).
    public var sizeBytes: Int64 { condition.withLock { total } }
    public var counters: Counters { condition.withLock { counts } }
    public var fetches: Int { counters.fetches }
    public var notOnServer: Int { counters.notOnServer }
    public var mismatches: Int { counters.mismatches }

    // MARK: Ensuring

    /// Makes the debug files of `ids` available to a job: an id held by a local store needs
    /// nothing; an id in the cache is marked used; any other is fetched (or waited for, when
    /// another caller is fetching it). Returns with every id settled; the cached ones are
    /// pinned until `release()`. Unknown (all-zero) ids and repeats are passed over.
    public func ensure(_ ids: [BuildID]) -> FetchPin {
        var seen: Set<BuildID> = []
        var local: [BuildID] = []
        var wanted: [BuildID] = []
        for id in ids where !id.isUnknown && !id.hex.isEmpty && seen.insert(id).inserted {
            if localStores.contains(where: { $0.debugFilePath(buildID: id) != nil }) {
                local.append(id)
            } else {
                wanted.append(id)
            }
        }
        // Only the ids that will go to the network are worth threads of their own.
        let now = ContinuousClock.now
        let network = condition.withLock {
            wanted.filter { id in entries[id] == nil && (remembered[id].map { $0.until <= now } ?? true) }.count
        }
        let results = ResultBox()
        Self.forEach(wanted, width: min(Self.parallelFetches, network)) { id in
            let (result, answers) = self.obtain(id)
            results.set(id, result, answers)
        }
        flushLog()
        var pinned: [BuildID] = []
        var missing: [BuildID] = []
        var errors: [BuildID: SymbolFetchError] = [:]
        for id in wanted {
            switch results.get(id) {
            case .success?: pinned.append(id)
            case .failure(let error)?:
                missing.append(id)
                errors[id] = error
            case nil: missing.append(id)
            }
        }
        return FetchPin(pinned: pinned, local: local, missing: missing, errors: errors, answers: results.answers) { [self] ids in
            unpin(ids)
        }
    }

    /// Settles one id: success when it is in the cache (then pinned once more), else why not;
    /// with what the sources said when this call asked them.
    private func obtain(_ id: BuildID) -> (Result<Void, SymbolFetchError>, [SymbolSourceAnswer]) {
        condition.lock()
        defer { condition.unlock() }
        var answers: [SymbolSourceAnswer] = []
        // Pinned before anything else, so that once added it cannot be evicted before the caller has it.
        pins[id, default: 0] += 1
        var outcome: Result<Void, SymbolFetchError>
        while true {
            if entries[id] != nil {
                if markUsed(id) { return (.success(()), answers) }
                continue  // gone from disk: forgotten, so fetched again
            }
            if let known = remembered[id] {
                if known.until > ContinuousClock.now {
                    outcome = .failure(known.error)
                    break
                }
                remembered[id] = nil
            }
            if let flight = flights[id] {
                counts.sharedDownloads += 1
                while flight.result == nil { condition.wait() }
                if case .failure(let error)? = flight.result {
                    outcome = .failure(error)
                    break
                }
                continue  // added: the entry is there, and pinned by us
            }
            let flight = Flight()
            flights[id] = flight
            condition.unlock()
            let fetched: Fetched
            (fetched, answers) = fetch(id)
            condition.lock()
            outcome = record(fetched, for: id)
            flight.result = outcome
            flights[id] = nil
            condition.broadcast()
            if case .success = outcome { return (outcome, answers) }
            break
        }
        unpinLocked([id])
        return (outcome, answers)
    }

    /// Asks the sources in order for `id` until one sends its file: the debuginfo, else
    /// (404) the executable, added to the store through the store's own checks. A source that
    /// sends another build's file, or no debug file, is refused and the next one asked. No lock held.
    private func fetch(_ id: BuildID) -> (Fetched, [SymbolSourceAnswer]) {
        var answers: [SymbolSourceAnswer] = []
        var failure: SymbolFetchError?
        var refusal: SymbolFetchError?
        for source in sources {
            switch source.turn(for: id, at: ContinuousClock.now) {
            case .rememberedMiss:
                continue
            case .backingOff(let why):
                answers.append(SymbolSourceAnswer(source: source.name, outcome: .failed, detail: why, answeredAt: Date()))
                failure = failure ?? .transport(buildID: id, request: "buildid/\(id.hex)", reason: "\(source.name): \(why)")
                continue
            case .ask:
                break
            }
            let (asked, answer) = ask(source, for: id)
            answers.append(answer)
            switch asked {
            case .added: return (asked, answers)
            case .notOnServer: continue
            case .refused(let error): refusal = error
            case .failed(let error):
                // The disk is ours: another source would fail the same way.
                if case .store = error { return (asked, answers) }
                failure = error
            }
        }
        // Only final answers are remembered for the id: a source that failed is asked again.
        if let failure { return (.failed(failure), answers) }
        if let refusal { return (.refused(refusal), answers) }
        return (.notOnServer, answers)
    }

    /// One source's answer about `id`, recorded in its counters (and its backoff).
    private func ask(_ source: SymbolSource, for id: BuildID) -> (Fetched, SymbolSourceAnswer) {
        let started = Date()
        func answer(_ outcome: SymbolSourceAnswer.Outcome, _ detail: String, bytes: Int64 = 0) -> SymbolSourceAnswer {
            source.record(outcome, for: id, bytes: bytes)
            return SymbolSourceAnswer(source: source.name, outcome: outcome, detail: detail, answeredAt: started)
        }
        for role in ["debuginfo", "executable"] {
            let request = "buildid/\(id.hex)/\(role)"
            let temporary = incoming + "/\(id.hex).\(role).\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            condition.withLock { counts.requests += 1 }
            let status: Int
            do {
                status = try source.download(request, to: temporary, maxBytes: capacityBytes)
            } catch {
                let failure = SymbolFetchError.transport(buildID: id, request: request, reason: error.description)
                return (.failed(failure), answer(.failed, "GET /\(request): \(error.description)"))
            }
            if status == 404 { continue }
            guard status == 200 else {
                return (.failed(.status(buildID: id, request: request, status: status)), answer(.failed, "GET /\(request) answered \(status)"))
            }
            defer { unlink(temporary) }
            var size = stat()
            let bytes = stat(temporary, &size) == 0 ? Int64(size.st_size) : 0
            condition.withLock { counts.fetches += 1 }
            let added: [AddOutcome]
            do {
                added = try store.addFile(path: temporary)
            } catch {
                if case .io(_, let reason) = error {
                    return (.failed(.store(buildID: id, reason: reason)), answer(.failed, "the file could not be stored: \(reason)"))
                }
                let refusal = SymbolFetchError.mismatch(buildID: id, request: request, served: [], reason: error.description)
                return (.refused(refusal), answer(.refused, "GET /\(request): not a debug file (\(error.description))"))
            }
            let served = Array(Set(added.map(\.entry.buildId))).sorted()
            guard served.contains(id) else {
                condition.withLock { dropUnasked(served, keeping: id) }
                let refusal = SymbolFetchError.mismatch(buildID: id, request: request, served: served, reason: nil)
                return (
                    .refused(refusal),
                    answer(.refused, "GET /\(request) sent the file of build id \(served.map(\.hex).joined(separator: ", ")): refused")
                )
            }
            return (.added(added, request: request), answer(.found, "GET /\(request): \(bytes) bytes", bytes: bytes))
        }
        return (.notOnServer, answer(.notFound, "404 for debuginfo and executable"))
    }

    /// Records what a download came to. Lock held.
    private func record(_ fetched: Fetched, for id: BuildID) -> Result<Void, SymbolFetchError> {
        switch fetched {
        case .notOnServer:
            counts.notOnServer += 1
            return remember(id, .notOnServer(buildID: id))
        case .failed(let error):
            counts.failures += 1
            pendingLog.append(error.description)
            return .failure(error)
        case .refused(let error):
            counts.mismatches += 1
            pendingLog.append(error.description)
            return remember(id, error)
        case .added(let outcomes, _):
            dropUnasked(Array(Set(outcomes.map(\.entry.buildId))), keeping: id)
            let bytes = store.storedBytes(buildID: id)
            entries[id] = Entry(bytes: bytes, lastUsed: 0)
            total += bytes
            _ = markUsed(id)
            evictOverCapacity()
            return .success(())
        }
    }

    /// What came with a download under ids other than `id` goes, unless the cache already
    /// held it (then only its size may have changed) or another caller is fetching it right
    /// now. Lock held.
    private func dropUnasked(_ served: [BuildID], keeping id: BuildID) {
        for other in served where other != id {
            if let known = entries[other] {
                let bytes = store.storedBytes(buildID: other)
                total += bytes - known.bytes
                entries[other]?.bytes = bytes
            } else if flights[other] == nil {
                removeFromStore(other)
            }
        }
    }

    /// Remembers a final answer about `id` for `notFoundRetention`. Lock held.
    private func remember(_ id: BuildID, _ error: SymbolFetchError) -> Result<Void, SymbolFetchError> {
        let now = ContinuousClock.now
        if remembered.count >= 10_000 { remembered = remembered.filter { $0.value.until > now } }
        remembered[id] = (now + notFoundRetention, error)
        return .failure(error)
    }

    // MARK: Recency and eviction (lock held)

    /// Stamps `id`'s sidecar with the next use time. False when the entry is gone from disk
    /// (removed behind the cache's back): it is then forgotten.
    private func markUsed(_ id: BuildID) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let stamp = max(Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec), lastStamp + 1)
        lastStamp = stamp
        let sidecar = store.sidecarPath(buildID: id)
        // atime left alone (UTIME_OMIT); mtime is the stamp.
        let times = [
            timespec(tv_sec: 0, tv_nsec: Self.omitTime),
            timespec(tv_sec: Int(stamp / 1_000_000_000), tv_nsec: Int(stamp % 1_000_000_000)),
        ]
        do {
            try SystemCall.check("utimensat", path: sidecar) { utimensat(AT_FDCWD, sidecar, times, AT_SYMLINK_NOFOLLOW) }
        } catch {
            if error.errno == ENOENT {
                if let gone = entries.removeValue(forKey: id) { total -= gone.bytes }
                pendingLog.append("symbol cache: \(id) was removed from \(directory) by something else; fetching it again")
                return false
            }
            // Recency is lost for this use (the order may be off after a restart); the file is fine.
            pendingLog.append("symbol cache: cannot mark \(id) as used: \(error.description)")
        }
        entries[id]?.lastUsed = stamp
        return true
    }

    /// `UTIME_OMIT` ((1 << 30) - 2 in <sys/stat.h>, which Swift does not import as a constant).
    private static let omitTime = (1 << 30) - 2

    /// Removes unpinned entries unused for longer than `maxAge`, then the least recently used
    /// ones while the cache is over its capacity.
    private func evictOverCapacity() {
        if let maxAge {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let age = maxAge.components
            let oldest = Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
                &- min(age.seconds, Int64.max / 2_000_000_000) &* 1_000_000_000
            for (id, entry) in entries where entry.lastUsed < oldest && pins[id, default: 0] == 0 {
                removeFromStore(id)
                entries[id] = nil
                total -= entry.bytes
                counts.evictions += 1
                pendingLog.append("symbol cache: removed \(id) (unused for longer than \(age.seconds) s)")
            }
        }
        guard total > capacityBytes else { return }
        let candidates = entries.filter { pins[$0.key, default: 0] == 0 }
            .sorted { ($0.value.lastUsed, $0.key) < ($1.value.lastUsed, $1.key) }
        for (id, entry) in candidates {
            guard total > capacityBytes else { break }
            removeFromStore(id)
            entries[id] = nil
            total -= entry.bytes
            counts.evictions += 1
            pendingLog.append("symbol cache: evicted \(id) (\(entry.bytes) bytes, least recently used)")
        }
        if total > capacityBytes {
            pendingLog.append(
                "symbol cache: \(total) bytes held, over the capacity of \(capacityBytes): the rest is pinned by jobs in flight")
        }
    }

    private func removeFromStore(_ id: BuildID) {
        do { _ = try store.remove(buildID: id) } catch {
            if case .notFound = error { return }
            pendingLog.append("symbol cache: cannot remove \(id): \(error.description)")
        }
    }

    /// Applies the age limit now (the cache otherwise trims on each add and release).
    public func trim() {
        condition.withLock { evictOverCapacity() }
        flushLog()
    }

    private func unpin(_ ids: [BuildID]) {
        condition.withLock { unpinLocked(ids) }
        flushLog()
    }

    private func unpinLocked(_ ids: [BuildID]) {
        for id in ids {
            let left = pins[id, default: 0] - 1
            pins[id] = left > 0 ? left : nil
        }
        evictOverCapacity()
    }

    // MARK: Helpers

    /// Hands the log lines gathered under the lock to the logger, outside it.
    private func flushLog() {
        let lines = condition.withLock { () -> [String] in
            defer { pendingLog.removeAll() }
            return pendingLog
        }
        if let logger { lines.forEach(logger) }
    }

    /// Empties `.fetching/`: downloads a stopped worker left half done.
    private func removeLeftoverDownloads() throws(SymbolFetchError) {
        let fd: Int32
        do {
            fd = try SystemCall.check("open", path: incoming) { open(incoming, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        } catch {
            throw .cacheDirectory(path: directory, reason: error.description)
        }
        defer { close(fd) }
        DirectoryWalk.walk(directory: fd, label: incoming, maximumDepth: 0) { event in
            if case .entry(let entry) = event { unlink(entry.path) }
        }
    }

    /// Runs `body` for each item on up to `width` threads (inline when one is enough).
    private static func forEach(_ items: [BuildID], width: Int, _ body: @escaping @Sendable (BuildID) -> Void) {
        guard width > 1, items.count > 1 else {
            items.forEach(body)
            return
        }
        let queue = WorkQueue(items)
        let group = DispatchGroup()
        for _ in 0..<min(width, items.count) {
            group.enter()
            Thread {
                while let item = queue.next() { body(item) }
                group.leave()
            }.start()
        }
        group.wait()
    }
}

/// The items of a parallel `forEach`, handed out one at a time.
/// Sendable: `lock` guards `items`.
private final class WorkQueue: @unchecked Sendable {
    private let lock = NSLock()
    private var items: ArraySlice<BuildID>
    init(_ items: [BuildID]) { self.items = items[...] }
    func next() -> BuildID? { lock.withLock { items.popFirst() } }
}

/// Per-id results, and what the sources said, gathered from several threads.
/// Sendable: `lock` guards `results` and `said`.
private final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [BuildID: Result<Void, SymbolFetchError>] = [:]
    private var said: [BuildID: [SymbolSourceAnswer]] = [:]
    func set(_ id: BuildID, _ result: Result<Void, SymbolFetchError>, _ answers: [SymbolSourceAnswer]) {
        lock.withLock {
            results[id] = result
            if !answers.isEmpty { said[id] = answers }
        }
    }
    func get(_ id: BuildID) -> Result<Void, SymbolFetchError>? { lock.withLock { results[id] } }
    var answers: [BuildID: [SymbolSourceAnswer]] { lock.withLock { said } }
}
