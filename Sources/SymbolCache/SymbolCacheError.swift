import Demangling

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
    /// Built with another executable beside the debug file (or with one where there is none now, or the reverse).
    case otherExecutable(path: String)
    /// Holds names demangled by another build of a demangler library than this process's.
    case otherDemangler(path: String, family: Demangler.Family, recorded: DemanglerIdentity, current: DemanglerIdentity)
    case corrupt(path: String, detail: String)
    case unwritable(path: String, reason: String)

    public var description: String {
        switch self {
        case .unreadable(let p, let r): return "\(p): cannot read symcache: \(r)"
        case .notASymcache(let p): return "\(p): not a symcache"
        case .unsupportedVersion(let p, let v): return "\(p): symcache format version \(v), this build reads \(SymbolCacheVersions.current)"
        case .truncated(let p, let e, let f): return "\(p): symcache truncated (\(f) of \(e) bytes)"
        case .checksumMismatch(let p): return "\(p): symcache checksum mismatch"
        case .staleSource(let p): return "\(p): symcache was built from another debug file"
        case .otherExecutable(let p): return "\(p): symcache was built with another executable beside the debug file"
        case .otherDemangler(let p, let family, let recorded, let current):
            return "\(p): symcache names were demangled by another \(family == .swift ? "Swift runtime" : "C++ ABI library") (\(recorded), this process has \(current))"
        case .corrupt(let p, let d): return "\(p): corrupt symcache: \(d)"
        case .unwritable(let p, let r): return "\(p): cannot write symcache: \(r)"
        }
    }
}
