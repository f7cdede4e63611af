import DebugInfo
import Demangling

/// One inline level with its name already demangled in both styles Stackline prints.
public struct CachedFrame: Sendable, Hashable {
    /// Exactly what `DebugFile.frames(at:)` answers for this level.
    public var source: SourceFrame
    /// `source.symbol` demangled in `Demangler.Style.full`; nil when `symbol` is nil.
    public var fullName: String?
    /// `source.symbol` demangled in `Demangler.Style.simplified`; nil when `symbol` is nil.
    public var simplifiedName: String?

    public init(source: SourceFrame, fullName: String?, simplifiedName: String?) {
        self.source = source
        self.fullName = fullName
        self.simplifiedName = simplifiedName
    }

    /// The name in `style`.
    public func name(_ style: Demangler.Style) -> String? {
        style == .full ? fullName : simplifiedName
    }
}
