import DebugInfo
import SymbolCache
import ReportModel
import SymbolStore

/// Why a build-id could not be resolved.
public enum LookupError: Error, CustomStringConvertible, Equatable {
    case missingDebugFile(buildID: BuildID)
    case unusableDebugFile(buildID: BuildID, reason: String)
    /// The stored file is not the one stored for this build-id (replaced since): never used.
    case mismatchedDebugFile(buildID: BuildID, found: BuildID?)

    public var description: String {
        switch self {
        case .missingDebugFile(let id): return "no debug file for build-id \(id) in the store"
        case .unusableDebugFile(let id, let r): return "debug file for build-id \(id) is unusable: \(r)"
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

/// Opened debug files by build-id, least recently used evicted first.
///
/// Opening a file and indexing its units is the expensive part of a lookup, so a worker keeps
/// one cache for its whole life. Misses are not cached: a file may be added at any time (a
/// remote worker's fetching cache adds files between jobs).
///
/// The stores are searched in order: the first that holds a debug file for a build-id answers,
/// and the executable companion comes from that same store, so the two halves of an entry
/// always belong together.
public final class DebugFileCache {
    /// Every store searched, in order (a remote worker: its `--symbols` stores, then its cache).
    public let stores: [SymbolStoreDirectory]
    /// The first store searched.
    public let store: SymbolStoreDirectory
    public let capacity: Int
    private var files: [BuildID: DebugFile] = [:]
    private var order: [BuildID] = []

    /// `stores` must not be empty.
    public init(stores: [SymbolStoreDirectory], capacity: Int = 32) {
        precondition(!stores.isEmpty, "DebugFileCache needs at least one store")
        self.stores = stores
        self.store = stores[0]
        self.capacity = max(1, capacity)
    }

    public convenience init(store: SymbolStoreDirectory, capacity: Int = 32) {
        self.init(stores: [store], capacity: capacity)
    }

    /// The symcache of `id` when one is usable, else its debug file. SKELETON: the debug file only.
    public func source(buildID id: BuildID) throws(LookupError) -> LookupSource {
        .debugFile(try file(buildID: id))
    }

    public func file(buildID id: BuildID) throws(LookupError) -> DebugFile {
        if let hit = files[id] {
            if let i = order.firstIndex(of: id) { order.remove(at: i) }
            order.append(id)
            return hit
        }
        guard let located = stores.lazy.compactMap({ store in store.debugFilePath(buildID: id).map { (store, $0) } }).first
        else { throw .missingDebugFile(buildID: id) }
        let (store, path) = located
        // The store holds only regular files: a link there was not put there by the store.
        let stored: RegularFile
        do { stored = try RegularFile(path: path, followingLinks: false) } catch {
            throw .unusableDebugFile(buildID: id, reason: error.description)
        }
        let companion = store.executablePath(buildID: id).flatMap { try? RegularFile(path: $0, followingLinks: false) }
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
        files[id] = file
        order.append(id)
        if order.count > capacity { files[order.removeFirst()] = nil }
        return file
    }
}
