import Foundation

/// The container format of a file, from its first bytes.
public enum ObjectFormat: Sendable, Equatable {
    case elf, machO, fatMachO, zip, other

    /// The format of the regular file at `path`; `.other` for anything unreadable (a FIFO
    /// is not waited on).
    public static func of(path: String) -> ObjectFormat {
        guard let file = try? RegularFile(path: path) else { return .other }
        return of(file: file)
    }

    public static func of(file: RegularFile) -> ObjectFormat {
        guard let magic = try? file.read(at: 0, count: 4), magic.count == 4 else { return .other }
        switch (magic[0], magic[1], magic[2], magic[3]) {
        case (0x7f, 0x45, 0x4c, 0x46): return .elf
        case (0xcf, 0xfa, 0xed, 0xfe), (0xce, 0xfa, 0xed, 0xfe), (0xfe, 0xed, 0xfa, 0xcf), (0xfe, 0xed, 0xfa, 0xce):
            return .machO
        case (0xca, 0xfe, 0xba, 0xbe), (0xca, 0xfe, 0xba, 0xbf): return .fatMachO
        case (0x50, 0x4b, 0x03, 0x04), (0x50, 0x4b, 0x05, 0x06): return .zip
        default: return .other
        }
    }
}
