import CElfUtils

/// A function-ish symbol from `.symtab` or `.dynsym`.
public struct ElfSymbol: Sendable {
    public let name: String
    public let address: UInt64
    public let size: UInt64
    /// The `STT_FILE` symbol a local symbol follows: the source file, when DWARF has none.
    public var sourceFile: String? = nil
}
