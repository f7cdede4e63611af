/// One inline level of `DebugFile.frames(at:)`'s answer, with its strings as `AnswerString`
/// ids: the form the symcache builder compares and hashes (integers, not strings), and the one
/// `frames(at:)` itself is made from, so the two answer from one definition.
public struct AnswerLevel: Hashable, Sendable {
    public var symbol: AnswerString
    public var file: AnswerString
    public var line: Int32
    public var column: Int32
    public var functionStart: UInt64?
    public var fromSymbolTableOnly: Bool
}

/// A string of a debug file's answers (`DebugFile.string(_:)`), by where it is kept: interned
/// once by the file, so that equal ids are equal strings (the converse need not hold).
public enum AnswerString: Hashable, Sendable {
    case none
    /// An entry of the file's DWARF string table (names, paths).
    case dwarf(Int32)
    /// The name of the symbol table's symbol at this index.
    case symbolName(Int32)
    /// The `STT_FILE` source file of the symbol at this index.
    case symbolFile(Int32)
}

/// Where the last lookup of a sweep landed: lets the next, at a higher address, step forward
/// from there instead of searching again. Any cursor gives the same answers; a fresh one
/// searches.
public struct AnswerCursor: Sendable {
    var symbol = -1
    var unitRange = -1
    var unit: Int32 = -1
    var row = -1
    var function = -1
    /// The scope chain's buffer, reused from lookup to lookup.
    var chain: [Int32] = []

    public init() {}
}
