import Demangling

/// One inline level read in place from a symcache, without a `String` made for it: what
/// `SymbolCache.visitFrames(at:_:)` hands out. Valid only inside that call.
public struct CachedFrameView {
    /// 0 for the innermost level.
    public let index: Int
    /// How many levels the address has.
    public let count: Int
    public let file: CachedString?
    public let line: Int
    public let column: Int
    public let functionStart: UInt64?
    public let fromSymbolTableOnly: Bool
    /// The symcache the view reads from, alive for the whole visit.
    unowned(unsafe) let cache: SymbolCache
    /// Where the level's function record is in the mapping.
    let function: Int

    /// The level whose function is the symbol (not inlined into another).
    public var isOutermost: Bool { index == count - 1 }

    /// The name as the debug file has it (mangled). Each name is read when asked for: its
    /// string block is decompressed then, and text output asks for one style only.
    public var symbol: CachedString? { cache.name(function: function, field: FunctionRecord.Offset.symbol) }
    public var fullName: CachedString? { name(.full) }
    public var simplifiedName: CachedString? { name(.simplified) }

    /// The name in `style`: `symbol` demangled (the simplified style at its first use in this
    /// symcache, `SymbolCache.simplifiedName(function:)`).
    public func name(_ style: Demangler.Style) -> CachedString? {
        style == .full ? cache.name(function: function, field: FunctionRecord.Offset.fullName) : cache.simplifiedName(function: function)
    }
}
