import DebugInfo
import Demangling
import ReportModel

// SKELETON: the public contract the store and the symbolicator are written against. The
// format itself (writer, mapped reader, checks) replaces these bodies.

/// Why a symcache cannot be used. Every case means the same to a caller: answer from the debug
/// file, warn, and rebuild the symcache.
public enum SymbolCacheError: Error, CustomStringConvertible, Equatable, Sendable {
    case unreadable(path: String, reason: String)
    case notASymcache(path: String)
    case unsupportedVersion(path: String, found: UInt32)
    case truncated(path: String, expected: UInt64, found: UInt64)
    case checksumMismatch(path: String)
    /// Built from another file than the debug file now beside it.
    case staleSource(path: String)
    case corrupt(path: String, detail: String)
    case unwritable(path: String, reason: String)

    public var description: String {
        switch self {
        case .unreadable(let p, let r): return "\(p): cannot read symcache: \(r)"
        case .notASymcache(let p): return "\(p): not a symcache"
        case .unsupportedVersion(let p, let v): return "\(p): symcache format version \(v), this build reads \(SymbolCache.formatVersion)"
        case .truncated(let p, let e, let f): return "\(p): symcache truncated (\(f) of \(e) bytes)"
        case .checksumMismatch(let p): return "\(p): symcache checksum mismatch"
        case .staleSource(let p): return "\(p): symcache was built from another debug file"
        case .corrupt(let p, let d): return "\(p): corrupt symcache: \(d)"
        case .unwritable(let p, let r): return "\(p): cannot write symcache: \(r)"
        }
    }
}

/// The debug file a symcache was built from, as `fstat` sees it.
public struct SymbolCacheSource: Sendable, Equatable {
    public var size: UInt64
    public var modifiedNanoseconds: Int64
    public var inode: UInt64

    public init(size: UInt64, modifiedNanoseconds: Int64, inode: UInt64) {
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
        self.inode = inode
    }

    /// The source identity of an open file (from `fstat` on its descriptor).
    public init(file: RegularFile) throws(SymbolCacheError) {
        throw .unreadable(path: file.path, reason: "symcache not implemented yet")
    }
}

/// One inline level with its name already demangled in both styles Stackline prints.
public struct CachedFrame: Sendable, Hashable {
    /// Exactly what `DebugFile.frames(at:)` answers for this level.
    public var source: SourceFrame
    /// `source.symbol` demangled in `Demangler.Style.full`; nil when `symbol` is nil.
    public var fullName: String?
    /// `source.symbol` demangled in `Demangler.Style.simplified`; nil when `symbol` is nil.
    public var simplifiedName: String?

    public init(source: SourceFrame, fullName: String?, simplifiedName: String?) {
        self.source = source
        self.fullName = fullName
        self.simplifiedName = simplifiedName
    }

    /// The name in `style`.
    public func name(_ style: Demangler.Style) -> String? {
        style == .full ? fullName : simplifiedName
    }
}

/// A debug file's lookups precomputed: a versioned, checked, memory-mapped index.
public final class SymbolCache {
    /// Bumped whenever the layout or what it holds changes; other versions are rebuilt.
    public static let formatVersion: UInt32 = 1
    /// The file name extension beside the debug file in the store.
    public static let fileExtension = "symcache"

    /// Where the image expects to be loaded (as `DebugFile.preferredBase`).
    public let preferredBase: UInt64
    /// As `DebugFile.architecture`.
    public let architecture: Arch
    /// Built from a Mach-O slice (its addresses may carry pointer-authentication bits).
    public let isMachO: Bool

    /// Builds the index of `file` and writes it atomically to `path` (a temporary name in the
    /// same directory, then rename), recording `source`.
    public static func write(from file: DebugFile, source: SymbolCacheSource, to path: String) throws(SymbolCacheError) {
        throw .unwritable(path: path, reason: "symcache not implemented yet")
    }

    /// Maps and checks the symcache at `path`, which must have been built from `source`.
    public init(path: String, expecting source: SymbolCacheSource) throws(SymbolCacheError) {
        throw .unreadable(path: path, reason: "symcache not implemented yet")
    }

    /// What is at `address`, innermost inline level first: exactly `DebugFile.frames(at:)`'s
    /// answer, plus the demangled names.
    public func frames(at address: UInt64) -> [CachedFrame] {
        []
    }
}
