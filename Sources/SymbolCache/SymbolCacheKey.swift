import DebugInfo

/// Everything a symcache's answers depend on besides its format version
/// (`SymbolCacheVersions`): the header records it, and `SymbolCache(path:expecting:)` refuses a
/// symcache whose record differs from what the caller has now.
///
/// - the debug file it was built from;
/// - the executable given beside it, whose symbol table answers when the debug file has none
///   (nil: none was given, so adding one later may change the answers).
///
/// Names are stored as the debug file has them and demangled at lookup, so the demangler
/// libraries are not part of the key (they were until format version 3).
public struct SymbolCacheKey: Sendable, Equatable {
    public var source: SymbolCacheSource
    public var companion: SymbolCacheSource?

    public init(source: SymbolCacheSource, companion: SymbolCacheSource? = nil) {
        self.source = source
        self.companion = companion
    }

    /// The key for `file` and the executable `companion` given beside it, as they are open now
    /// (`fstat` on each descriptor).
    public init(file: RegularFile, companion: RegularFile?) throws(SymbolCacheError) {
        let source = try SymbolCacheSource(file: file)
        var other: SymbolCacheSource?
        if let companion { other = try SymbolCacheSource(file: companion) }
        self.init(source: source, companion: other)
    }

    /// Why a symcache recorded with `self` cannot answer for `expected`, nil when it can.
    func mismatch(expected: SymbolCacheKey, path: String) -> SymbolCacheError? {
        if source != expected.source { return .staleSource(path: path) }
        if companion != expected.companion { return .otherExecutable(path: path) }
        return nil
    }
}

extension SymbolCacheKey {
    /// The key `header` records.
    init(recordedIn header: SymbolCacheHeader) {
        typealias O = SymbolCacheLayout.Offset
        let flags: UInt32 = header[O.flags]
        source = SymbolCacheSource(size: header[O.sourceSize], modifiedNanoseconds: header[O.sourceMtime], inode: header[O.sourceInode])
        companion = flags & SymbolCacheLayout.Flag.withExecutable == 0 ? nil
            : SymbolCacheSource(size: header[O.executableSize], modifiedNanoseconds: header[O.executableMtime], inode: header[O.executableInode])
    }

    /// The flags this key sets in a header.
    var flags: UInt32 { companion == nil ? 0 : SymbolCacheLayout.Flag.withExecutable }

    /// Writes the key's fields (not its flags) into a header being built.
    func write(into raw: UnsafeMutableRawBufferPointer) {
        typealias O = SymbolCacheLayout.Offset
        func put<T: FixedWidthInteger>(_ value: T, _ offset: Int) { raw.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self) }
        put(source.size, O.sourceSize)
        put(source.modifiedNanoseconds, O.sourceMtime)
        put(source.inode, O.sourceInode)
        if let companion {
            put(companion.size, O.executableSize)
            put(companion.modifiedNanoseconds, O.executableMtime)
            put(companion.inode, O.executableInode)
        }
    }
}
