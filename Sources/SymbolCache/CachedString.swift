import ReportModel

/// A string of a symcache, as its mapped UTF-8 bytes: valid only inside the visit that handed
/// it out (the bytes belong to the mapping, which the `SymbolCache` owns).
public struct CachedString {
    public let bytes: UnsafeRawBufferPointer
    /// The writer's verdict that `TerminalText.escape` would change this string; when false,
    /// the bytes can be printed as they are.
    public let needsTerminalEscaping: Bool

    /// The verdict stored with `text`: computed once, when the string is stored or derived.
    static func needsEscaping(_ text: String) -> Bool { TerminalText.escape(text) != text }

    /// A copy as a `String`.
    public var string: String { String(decoding: bytes, as: UTF8.self) }
}
