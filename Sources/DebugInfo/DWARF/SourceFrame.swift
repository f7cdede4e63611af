import CElfUtils

/// One frame of what a file address resolves to.
public struct SourceFrame: Sendable, Hashable {
    /// Linkage name (mangled) or plain name, as DWARF or the symbol table gives it.
    public var symbol: String?
    public var file: String?
    /// 0 when unknown.
    public var line: Int
    /// 0 when unknown.
    public var column: Int
    /// Start of the function (symbol or DWARF range); set on the outermost frame only.
    public var functionStart: UInt64?
    /// True when the name comes from DWARF or the symbol table but there is no line information.
    public var fromSymbolTableOnly: Bool

    public init(symbol: String?, file: String?, line: Int, column: Int, functionStart: UInt64?, fromSymbolTableOnly: Bool = false) {
        self.symbol = symbol
        self.file = file
        self.line = line
        self.column = column
        self.functionStart = functionStart
        self.fromSymbolTableOnly = fromSymbolTableOnly
    }
}
