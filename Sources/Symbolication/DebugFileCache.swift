import DebugInfo
import SymbolStore

/// Why a build-id could not be resolved.
public enum LookupError: Error, CustomStringConvertible, Equatable {
    case missingDebugFile(buildID: String)
    case unusableDebugFile(buildID: String, reason: String)
    case invalidBuildID(String)

    public var description: String {
        switch self {
        case .missingDebugFile(let id): return "no debug file for build-id \(id) in the store"
        case .unusableDebugFile(let id, let r): return "debug file for build-id \(id) is unusable: \(r)"
        case .invalidBuildID(let id): return "not a build-id (expected hex digits): \(id)"
        }
    }
}

/// Opened debug files by build-id, least recently used evicted first.
///
/// Opening a file and indexing its units is the expensive part of a lookup, so a worker keeps
/// one cache for its whole life. Misses are not cached: a file may be added at any time.
public final class DebugFileCache {
    public let store: SymbolStoreDirectory
    public let capacity: Int
    private var files: [String: DebugFile] = [:]
    private var order: [String] = []

    public init(store: SymbolStoreDirectory, capacity: Int = 32) {
        self.store = store
        self.capacity = max(1, capacity)
    }

    public func file(buildID raw: String) throws(LookupError) -> DebugFile {
        let id: String
        do { id = try SymbolStoreDirectory.normalize(raw) } catch { throw .invalidBuildID(raw) }
        if let hit = files[id] {
            if let i = order.firstIndex(of: id) { order.remove(at: i) }
            order.append(id)
            return hit
        }
        guard let path = store.debugFilePath(buildID: id) else { throw .missingDebugFile(buildID: id) }
        let file: DebugFile
        do {
            // The executable supplies symbols when the debug file has none (it is only read then).
            file = try DebugFile.open(path: path, uuid: nil, symbolsFrom: store.executablePath(buildID: id))
        } catch {
            throw .unusableDebugFile(buildID: id, reason: error.description)
        }
        files[id] = file
        order.append(id)
        if order.count > capacity { files[order.removeFirst()] = nil }
        return file
    }
}
