import CElfUtils
import Foundation
import ReportModel

/// Why an ELF file cannot be used. Each case reads as a one-line reason.
public enum ElfError: Error, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case notELF(path: String)
    case truncated(path: String, detail: String)
    case corrupt(path: String, detail: String)
    /// A well-formed file in an encoding this build does not read (a compression method).
    case unsupported(path: String, detail: String)
    /// A file that would take more memory to read than Stackline gives one file.
    case tooLarge(path: String, detail: String)

    public var description: String {
        switch self {
        case .unreadable(let p, let r): return "\(p): cannot read file: \(r)"
        case .notELF(let p): return "\(p): not an ELF file"
        case .truncated(let p, let d): return "\(p): truncated ELF file: \(d)"
        case .corrupt(let p, let d): return "\(p): corrupt ELF file: \(d)"
        case .unsupported(let p, let d): return "\(p): unreadable ELF file: \(d)"
        case .tooLarge(let p, let d): return "\(p): ELF file too large to read: \(d)"
        }
    }
}
