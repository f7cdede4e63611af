import Foundation
import ReportModel

/// Where `LC_SYMTAB` says the symbols and their names are, relative to the slice.
public struct MachOSymtabCommand: Sendable, Equatable {
    public let symbolOffset: UInt64
    public let symbolCount: UInt64
    public let stringOffset: UInt64
    public let stringSize: UInt64
}
