import CElfUtils
import Foundation
import ReportModel

/// A section header, with its name resolved.
public struct ElfSection: Sendable {
    public let index: Int
    public let name: String
    public let type: UInt32
    public let flags: UInt64
    public let address: UInt64
    public let offset: UInt64
    public let size: UInt64
    public let link: UInt32
    public let entrySize: UInt64

    public var hasFileContents: Bool { type != UInt32(SHT_NOBITS) && type != UInt32(SHT_NULL) }
    public var isExecutable: Bool { flags & UInt64(SHF_EXECINSTR) != 0 }
    /// `SHF_COMPRESSED`: the bytes in the file are a compression header and compressed data.
    public var isCompressed: Bool { flags & UInt64(SHF_COMPRESSED) != 0 }
}
