/// Why a Mach-O file (thin, fat or inside a dSYM) cannot be used. Each case reads as one line.
public enum MachOError: Error, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case notMachO(path: String, detail: String)
    case unsupported(path: String, detail: String)
    case truncated(path: String, detail: String)
    case corrupt(path: String, detail: String)
    case missingUUID(path: String, arch: String)
    case noSuchArch(path: String, arch: String, available: [String])
    case archRequired(path: String, available: [String])

    public var description: String {
        switch self {
        case .unreadable(let p, let r): return "\(p): cannot read file: \(r)"
        case .notMachO(let p, let d): return "\(p): not a Mach-O file (\(d))"
        case .unsupported(let p, let d): return "\(p): unsupported Mach-O file: \(d)"
        case .truncated(let p, let d): return "\(p): truncated Mach-O file: \(d)"
        case .corrupt(let p, let d): return "\(p): corrupt Mach-O file: \(d)"
        case .missingUUID(let p, let a): return "\(p): Mach-O \(a) slice has no LC_UUID, so no crash report can name it"
        case .noSuchArch(let p, let a, let all): return "\(p): no \(a) slice (the file has \(all.joined(separator: ", ")))"
        case .archRequired(let p, let all): return "\(p): fat file with \(all.joined(separator: ", ")) slices: choose one (--arch)"
        }
    }
}

extension MachOError {
    /// A mapping failure as a Mach-O file's: an empty file is not a Mach-O file.
    init(_ error: MappedFileError) {
        switch error {
        case .empty(let path): self = .notMachO(path: path, detail: "empty file")
        case .unreadable(let path, let reason): self = .unreadable(path: path, reason: reason)
        }
    }
}
