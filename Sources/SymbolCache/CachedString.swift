/// A string of a symcache, as its mapped UTF-8 bytes: valid only inside the visit that handed
/// it out (the bytes belong to the mapping, which the `SymbolCache` owns).
public struct CachedString {
    public let bytes: UnsafeRawBufferPointer
    /// The writer's verdict that `TerminalText.escape` would change this string; when false,
    /// the bytes can be printed as they are.
    public let needsTerminalEscaping: Bool

    /// A copy as a `String`.
    public var string: String { String(decoding: bytes, as: UTF8.self) }
}
