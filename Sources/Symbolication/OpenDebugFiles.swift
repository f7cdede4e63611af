import DebugInfo
import Foundation
import SymbolCache
import ReportModel
import SymbolStore
import SystemCalls

/// Why a build-id could not be resolved.
public enum LookupError: Error, CustomStringConvertible, Equatable {
    case missingDebugFile(buildID: BuildID)
    case unusableDebugFile(buildID: BuildID, reason: String)
    /// The stored file is not the one stored for this build-id (replaced since): never used.
    case mismatchedDebugFile(buildID: BuildID, found: BuildID?)
    /// The debug file is usable but its symcache could not be written (`symbols reindex`).
    case symbolCacheFailed(buildID: BuildID, reason: String)

    public var description: String {
        switch self {
        case .missingDebugFile(let id): return "no debug file for build-id \(id) in the store"
        case .unusableDebugFile(let id, let r): return "debug file for build-id \(id) is unusable: \(r)"
        case .symbolCacheFailed(let id, let reason): return "symcache for build-id \(id) not written: \(reason)"
        case .mismatchedDebugFile(let id, let found):
            return "debug file stored for build-id \(id) has \(found.map { "build-id \($0)" } ?? "no build-id"): it was replaced after it was stored; not used (add the right file again)"
        }
    }
}

/// What answers lookups for one build id: its symcache when a valid one lies beside the debug
/// file, else the debug file itself.
public enum LookupSource {
    case symcache(SymbolCache)
    case debugFile(DebugFile)

    public var preferredBase: UInt64 {
        switch self {
        case .symcache(let c): return c.preferredBase
        case .debugFile(let f): return f.preferredBase
        }
    }

    public var architecture: Arch {
        switch self {
        case .symcache(let c): return c.architecture
        case .debugFile(let f): return f.architecture
        }
    }

    /// A Mach-O slice: its arm64 addresses may carry pointer-authentication bits.
    public var isMachO: Bool {
        switch self {
        case .symcache(let c): return c.isMachO
        case .debugFile(let f): return f.machO != nil
        }
    }
}

/// Why a lookup went on without a symcache.
public enum SymbolCacheWarning: CustomStringConvertible, Sendable {
    /// There was one, but it could not be used: answered from the debug file, and rebuilt.
    case notUsed(buildID: BuildID, reason: String)
    /// It could not be written: answered from the debug file.
    case notWritten(buildID: BuildID, reason: String)

    public var description: String {
        switch self {
        case .notUsed(let id, let reason): return "symcache for build-id \(id) not used (\(reason)): answering from the debug file and rebuilding it"
        case .notWritten(let id, let reason): return "symcache for build-id \(id) not written: \(reason)"
        }
    }
}

/// The debug files and symcaches a process keeps open, by build-id, least recently used closed
/// first: what answers a lookup for each build-id.
///
/// Opening a file and indexing its units is the expensive part of a lookup, so a worker keeps
/// one for its whole life. Misses are not remembered: a file may be added at any time (a
/// remote worker's `FetchedDebugFiles` adds files between jobs). Nor is a hit trusted blindly:
/// each is checked against the stored file's identity (size, time, inode, as a symcache's key
/// is), so a file upgraded, repaired or removed since is opened again, as the upload that did
/// it requeued the reports for.
///
/// The stores are searched in order: the first that holds a debug file for a build-id answers,
/// and the executable companion comes from that same store, so the two halves of an entry
/// always belong together.
///
/// A build id is answered from its symcache (`SymbolCache`, beside the debug file) when one
/// whose key (`SymbolCacheKey`: the stored debug file and executable, this process's
/// demanglers) matches is there and checks out. Otherwise the debug file answers, and the
/// symcache is built (or rebuilt) beside it, so the next process maps it instead of parsing
/// DWARF: a missing, older-format, stale or damaged symcache costs one build, never a wrong
/// answer.
public final class OpenDebugFiles {
    /// Every store searched, in order (a remote worker: its `--symbols` stores, then its cache).
    public let stores: [SymbolStoreDirectory]
    /// The first store searched.
    public let store: SymbolStoreDirectory
    public let capacity: Int
    /// False: every lookup parses the debug file, and no symcache is read or written.
    public let usesSymbolCaches: Bool
    /// Hears why a symcache was not used or not written (the lookup went on without it).
    public var warn: (SymbolCacheWarning) -> Void
    private var sources: [BuildID: LookupSource] = [:]
    /// The stored debug file each of `sources` was opened from, taken before opening it (a file
    /// replaced while it opened is then opened again at the next hit, never kept).
    /// And whether that file has line tables (a symcache does not say; the store's sidecar
    /// does, read once per open rather than per report: scripts/bench-queue.sh).
    private var openedFrom: [BuildID: (path: String, identity: SymbolCacheSource?, lineTables: Bool?)] = [:]
    private var order: [BuildID] = []
    /// Ids answered from their debug file while another process held the entry lock (building
    /// the symcache): the symcache's path and what was there then (nil: nothing, or a stale
    /// one being replaced). Each later use stats the path and opens again once it changed.
    private var provisional: [BuildID: (path: String, was: SymbolCacheSource?)] = [:]

    /// `stores` must not be empty.
    public init(
        stores: [SymbolStoreDirectory], capacity: Int = 32, usesSymbolCaches: Bool = true,
        warn: @escaping (SymbolCacheWarning) -> Void = { _ in }
    ) {
        precondition(!stores.isEmpty, "OpenDebugFiles needs at least one store")
        self.stores = stores
        self.store = stores[0]
        self.capacity = max(1, capacity)
        self.usesSymbolCaches = usesSymbolCaches
        self.warn = warn
    }

    public convenience init(store: SymbolStoreDirectory, capacity: Int = 32, usesSymbolCaches: Bool = true) {
        self.init(stores: [store], capacity: capacity, usesSymbolCaches: usesSymbolCaches)
    }

    /// What answers lookups for `id`: its symcache when usable (built now if it has to be),
    /// else its debug file.
    public func source(buildID id: BuildID) throws(LookupError) -> LookupSource {
        if let hit = sources[id] {
            if let i = order.firstIndex(of: id) { order.remove(at: i) }
            // One stat of the path it was opened from: a hit costs no open and no search of
            // the stores (the queue's hot path, scripts/bench-queue.sh).
            if let was = openedFrom[id], let identity = was.identity, Self.identity(ofPath: was.path) == identity,
                !(provisional[id].map { Self.identity(ofPath: $0.path) != $0.was } ?? false)
            {
                order.append(id)
                return hit
            }
            sources[id] = nil
            openedFrom[id] = nil
            provisional[id] = nil
        }
        let entry = try locate(id)
        let identity = Self.identity(ofPath: entry.debugPath)
        let source: LookupSource
        if usesSymbolCaches {
            source = try symbolCacheOrFile(id, entry)
        } else {
            source = .debugFile(try open(id, entry).file)
        }
        sources[id] = source
        let lineTables: Bool?
        switch source {
        case .debugFile(let file): lineTables = file.elf.hasDWARF
        case .symcache: lineTables = entry.store.entry(buildID: id)?.hasDWARF
        }
        openedFrom[id] = (entry.debugPath, identity, lineTables)
        order.append(id)
        if order.count > capacity {
            let evicted = order.removeFirst()
            sources[evicted] = nil
            openedFrom[evicted] = nil
            provisional[evicted] = nil
        }
        return source
    }

    /// Whether the debug file `source(buildID:)` last opened for `id` has line tables (DWARF);
    /// nil when not open or unknown.
    public func lineTables(buildID id: BuildID) -> Bool? { openedFrom[id]?.lineTables }

    /// The identity of the file at `path` now (size, time, inode, as a symcache's key has it);
    /// nil when it is gone.
    private static func identity(ofPath path: String) -> SymbolCacheSource? {
        guard let info = try? SystemCall.status(ofPath: path) else { return nil }
        return SymbolCacheSource(status: info)
    }

    /// The debug file of `id` itself, parsed, whatever symcache exists (the reference the
    /// symcache is checked against).
    public func file(buildID id: BuildID) throws(LookupError) -> DebugFile {
        if case .debugFile(let file)? = sources[id] { return file }
        return try open(id, try locate(id)).file
    }

    /// Builds `id`'s symcache from its debug file again, whatever is there now
    /// (`stackline symbols reindex`). Returns the symcache's path.
    @discardableResult
    public func rebuildSymbolCache(buildID id: BuildID) throws(LookupError) -> String {
        let entry = try locate(id)
        let opened = try open(id, entry)
        if let i = order.firstIndex(of: id) { order.remove(at: i) }
        sources[id] = nil
        let path = entry.store.symbolCachePath(buildID: id)
        let outcome: Result<Void, SymbolCacheError>
        do {
            outcome = try entry.store.withEntryLock(buildID: id) { () -> Result<Void, SymbolCacheError> in
                Self.write(opened, to: path)
            }
        } catch {
            throw .symbolCacheFailed(buildID: id, reason: error.description)
        }
        if case .failure(let error) = outcome { throw .symbolCacheFailed(buildID: id, reason: error.description) }
        return path
    }

    /// Where `id`'s entry is: the first store holding its debug file.
    private struct Entry {
        let store: SymbolStoreDirectory
        let debugPath: String
    }

    private func locate(_ id: BuildID) throws(LookupError) -> Entry {
        guard let located = stores.lazy.compactMap({ store in store.debugFilePath(buildID: id).map { Entry(store: store, debugPath: $0) } }).first
        else { throw .missingDebugFile(buildID: id) }
        return located
    }

    /// A debug file opened for lookups, with the descriptors it was read through.
    private struct Opened {
        let file: DebugFile
        let stored: RegularFile
        let companion: RegularFile?
    }

    private func open(_ id: BuildID, _ entry: Entry) throws(LookupError) -> Opened {
        // The store holds only regular files: a link there was not put there by the store.
        let stored: RegularFile
        do { stored = try RegularFile(path: entry.debugPath, followingLinks: false) } catch {
            throw .unusableDebugFile(buildID: id, reason: error.description)
        }
        let companion = entry.store.executablePath(buildID: id).flatMap { try? RegularFile(path: $0, followingLinks: false) }
        let file: DebugFile
        do {
            // The executable supplies symbols when the debug file has none (it is only read then).
            file = try DebugFile.open(file: stored, uuid: nil, symbolsFrom: companion)
        } catch {
            throw .unusableDebugFile(buildID: id, reason: error.description)
        }
        // Checked on the opened file itself: the path may name another file by now.
        let found = file.machO?.uuid ?? file.elf.buildID
        guard found == id else { throw .mismatchedDebugFile(buildID: id, found: found) }
        return Opened(file: file, stored: stored, companion: companion)
    }

    /// The symcache beside `entry`, or nil with the reason it cannot be used (nil reason: there is none).
    private func openSymbolCache(_ id: BuildID, _ entry: Entry) -> (SymbolCache?, reason: String?) {
        let path = entry.store.symbolCachePath(buildID: id)
        var info = stat()
        if lstat(path, &info) != 0 && errno == ENOENT { return (nil, nil) }
        let stored: RegularFile
        do { stored = try RegularFile(path: entry.debugPath, followingLinks: false) } catch { return (nil, error.description) }
        // As `open` finds it: the executable whose symbols the debug file would borrow.
        let companion = entry.store.executablePath(buildID: id).flatMap { try? RegularFile(path: $0, followingLinks: false) }
        do throws(SymbolCacheError) {
            return (try SymbolCache(path: path, expecting: try SymbolCacheKey(file: stored, companion: companion)), nil)
        } catch {
            return (nil, error.description)
        }
    }

    private func symbolCacheOrFile(_ id: BuildID, _ entry: Entry) throws(LookupError) -> LookupSource {
        let (cache, reason) = openSymbolCache(id, entry)
        if let cache { return .symcache(cache) }
        if let reason { warn(.notUsed(buildID: id, reason: reason)) }
        let opened = try open(id, entry)
        let path = entry.store.symbolCachePath(buildID: id)
        do {
            // Not waiting for a build under way (the upload's indexer, another worker): the
            // debug file gives the same answers now, so the first report of a new build does
            // not wait for its symcache (scripts/bench-symcache-build.sh, first crash).
            let built = try entry.store.withEntryLockIfFree(buildID: id) { () -> Result<SymbolCache, SymbolCacheError> in
                // Another process may have built it before this one took the lock.
                if let fresh = openSymbolCache(id, entry).0 { return .success(fresh) }
                if case .failure(let error) = Self.write(opened, to: path) { return .failure(error) }
                let (cache, reason) = openSymbolCache(id, entry)
                return cache.map { .success($0) } ?? .failure(.corrupt(path: path, detail: reason ?? "missing after it was written"))
            }
            switch built {
            case .success(let cache)?: return .symcache(cache)
            case .failure(let error)?: warn(.notWritten(buildID: id, reason: error.description))
            case nil:
                provisional[id] = (path, Self.identity(ofPath: path))
                return .debugFile(opened.file)
            }
        } catch {
            warn(.notWritten(buildID: id, reason: error.description))
        }
        return .debugFile(opened.file)
    }

    private static func write(_ opened: Opened, to path: String) -> Result<Void, SymbolCacheError> {
        do throws(SymbolCacheError) {
            try SymbolCache.write(from: opened.file, key: try SymbolCacheKey(file: opened.stored, companion: opened.companion), to: path)
            return .success(())
        } catch {
            return .failure(error)
        }
    }
}
