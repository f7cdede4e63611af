import Demangling

/// One inline level read in place from a symcache, without a `String` made for it: what
/// `SymbolCache.visitFrames(at:_:)` hands out. Valid only inside that call.
public struct CachedFrameView {
    /// 0 for the innermost level.
    public let index: Int
    /// How many levels the address has.
    public let count: Int
    public let symbol: CachedString?
    public let fullName: CachedString?
    public let simplifiedName: CachedString?
    public let file: CachedString?
    public let line: Int
    public let column: Int
    public let functionStart: UInt64?
    public let fromSymbolTableOnly: Bool

    /// The level whose function is the symbol (not inlined into another).
    public var isOutermost: Bool { index == count - 1 }

    /// The name in `style`.
    public func name(_ style: Demangler.Style) -> CachedString? {
        style == .full ? fullName : simplifiedName
    }
}
