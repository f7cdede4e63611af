import DebugInfo
import Demangling

/// Everything a symcache's answers depend on besides its format version
/// (`SymbolCacheVersions`): the header records it, and `SymbolCache(path:expecting:)` refuses a
/// symcache whose record differs from what the caller has now.
///
/// - the debug file it was built from;
/// - the executable given beside it, whose symbol table answers when the debug file has none
///   (nil: none was given, so adding one later may change the answers);
/// - the demanglers: the names are stored demangled, so they are what this build of the Swift
///   runtime and of the C++ ABI library printed. Only the demanglers the symcache's names went
///   through are recorded and compared: a C program's symcache survives a Swift upgrade.
public struct SymbolCacheKey: Sendable, Equatable {
    public var source: SymbolCacheSource
    public var companion: SymbolCacheSource?
    /// This process's demanglers when expecting; when recorded, the identities of those used
    /// (`usedDemanglers`) and `.unknown` for the others.
    public var demanglers: DemanglerVersions
    /// Which demanglers the stored names went through (recorded keys only; empty when expecting).
    public var usedDemanglers: Set<Demangler.Family>

    public init(
        source: SymbolCacheSource, companion: SymbolCacheSource? = nil, demanglers: DemanglerVersions = .current,
        usedDemanglers: Set<Demangler.Family> = []
    ) {
        self.source = source
        self.companion = companion
        self.demanglers = demanglers
        self.usedDemanglers = usedDemanglers
    }

    /// The key for `file` and the executable `companion` given beside it, as they are open now
    /// (`fstat` on each descriptor), with this process's demanglers.
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
        for family in Demangler.Family.allCases where usedDemanglers.contains(family) {
            if demanglers[family] != expected.demanglers[family] {
                return .otherDemangler(path: path, family: family, recorded: demanglers[family], current: expected.demanglers[family])
            }
        }
        return nil
    }
}

extension SymbolCacheKey {
    private static let demanglerFields: [(Demangler.Family, offset: Int, flag: UInt32)] = [
        (.swift, SymbolCacheLayout.Offset.swiftDemangler, SymbolCacheLayout.Flag.swiftNames),
        (.cxx, SymbolCacheLayout.Offset.cxxDemangler, SymbolCacheLayout.Flag.cxxNames),
    ]

    /// The key `header` records; nil when an identity's length does not fit its field.
    init?(recordedIn header: SymbolCacheHeader) {
        typealias O = SymbolCacheLayout.Offset
        let flags: UInt32 = header[O.flags]
        source = SymbolCacheSource(size: header[O.sourceSize], modifiedNanoseconds: header[O.sourceMtime], inode: header[O.sourceInode])
        companion = flags & SymbolCacheLayout.Flag.withExecutable == 0 ? nil
            : SymbolCacheSource(size: header[O.executableSize], modifiedNanoseconds: header[O.executableMtime], inode: header[O.executableInode])
        demanglers = DemanglerVersions(swift: .unknown, cxx: .unknown)
        usedDemanglers = []
        for (family, offset, flag) in Self.demanglerFields {
            let length = Int(header.bytes[offset])
            guard length <= DemanglerIdentity.maximumLength else { return nil }
            demanglers[family] = DemanglerIdentity(bytes: Array(header.bytes[(offset + 1)..<(offset + 1 + length)]))
            if flags & flag != 0 { usedDemanglers.insert(family) }
        }
    }

    /// The flags this key sets in a header.
    var flags: UInt32 {
        var flags: UInt32 = companion == nil ? 0 : SymbolCacheLayout.Flag.withExecutable
        for (family, _, flag) in Self.demanglerFields where usedDemanglers.contains(family) { flags |= flag }
        return flags
    }

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
        for (family, offset, _) in Self.demanglerFields where usedDemanglers.contains(family) {
            let bytes = demanglers[family].bytes
            raw[offset] = UInt8(bytes.count)
            for (i, b) in bytes.enumerated() { raw[offset + 1 + i] = b }
        }
    }
}
