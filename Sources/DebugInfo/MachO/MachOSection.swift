import Foundation
import ReportModel

/// A section of a Mach-O segment.
public struct MachOSection: Sendable, Equatable {
    /// 1-based, in load-command order: the `n_sect` numbering of the symbol table.
    public let number: Int
    public let segment: String
    public let name: String
    public let address: UInt64
    public let size: UInt64
    /// Offset from the start of the slice; 0 for sections without file contents.
    public let offset: UInt64
    public let flags: UInt32

    /// Zero-fill sections and the code sections of a dSYM (offset 0) carry no bytes.
    public var hasFileContents: Bool {
        let type = flags & 0xff
        return offset != 0 && size != 0 && type != 0x1 && type != 0xc && type != 0x12
    }
}
