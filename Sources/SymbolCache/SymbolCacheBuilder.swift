import DebugInfo
import Demangling
import ReportModel
import StacklineDeflate

/// Builds a symcache's bytes from a debug file.
///
/// `DebugFile.frames(at:)` is constant between the addresses `DebugFile.answerBoundaries()`
/// lists, so it is called once per interval: the stored answers are the DWARF path's own, not
/// a second implementation of it that could drift. Identical answers (chains of frames) are
/// stored once, neighbouring intervals with the same answer are merged, strings are interned.
struct SymbolCacheBuilder {
    private var strings: [String] = []
    private var stringIDs: [String: UInt32] = [:]
    private var names: [String: (full: UInt32, simplified: UInt32)] = [:]
    private var frameRecords: [UInt8] = []
    private var frameCount = 0
    private var chainStarts: [UInt32] = [0]
    private var chainIDs: [[SourceFrame]: UInt32] = [:]
    private var functionRecords: [UInt8] = []
    private var functionCount = 0
    private var functionIDs: [FunctionKey: UInt32] = [:]
    /// The demanglers the stored names went through: the key records their identities.
    private var usedDemanglers: Set<Demangler.Family> = []

    /// `key` names the inputs (its `usedDemanglers` is ignored: the builder finds them out).
    static func build(from file: DebugFile, key: SymbolCacheKey) throws(SymbolCacheError) -> [UInt8] {
        var builder = SymbolCacheBuilder()
        return try builder.run(file, key: key)
    }

    private mutating func run(_ file: DebugFile, key: SymbolCacheKey) throws(SymbolCacheError) -> [UInt8] {
        let path = file.elf.path
        let boundaries = file.answerBoundaries()
        var starts: [UInt64] = []
        var chains: [UInt32] = []
        starts.reserveCapacity(boundaries.count)
        chains.reserveCapacity(boundaries.count)
        for address in boundaries {
            let frames = file.frames(at: address)
            let chain = frames.isEmpty ? SymbolCacheLayout.none : try chainID(frames, path: path)
            // Merge with the previous interval when the answer is the same: only changes are kept.
            if let last = chains.last, last == chain { continue }
            // Leading "no answer" intervals answer as addresses below the first start do.
            if chains.isEmpty && chain == SymbolCacheLayout.none { continue }
            starts.append(address)
            chains.append(chain)
        }
        let segmentBase = starts.first ?? 0
        let wide = (starts.last ?? 0) - segmentBase > UInt64(UInt32.max)
        var blob: [UInt8] = []
        var refs: [UInt8] = []
        refs.reserveCapacity(strings.count * 8)
        for s in strings {
            guard blob.count <= Int(UInt32.max), s.utf8.count < Int(SymbolCacheLayout.escapeBit) else {
                throw .unwritable(path: path, reason: "string table over 4 GiB")
            }
            let escape = TerminalText.escape(s) != s ? SymbolCacheLayout.escapeBit : 0
            Self.append(UInt32(blob.count), to: &refs)
            Self.append(UInt32(s.utf8.count) | escape, to: &refs)
            blob += s.utf8
        }
        guard blob.count <= Int(UInt32.max), starts.count < Int(UInt32.max), frameCount < Int(UInt32.max), functionCount < Int(UInt32.max) else {
            throw .unwritable(path: path, reason: "too large for format version \(SymbolCacheVersions.current)")
        }
        let layout = SymbolCacheLayout(
            segmentCount: starts.count, chainCount: chainStarts.count - 1, frameCount: frameCount,
            functionCount: functionCount, stringCount: strings.count, blobSize: blob.count, wideStarts: wide)
        var recorded = key
        recorded.usedDemanglers = usedDemanglers
        var out = [UInt8](repeating: 0, count: layout.totalSize)
        out.withUnsafeMutableBytes { raw in
            func put<T: FixedWidthInteger>(_ value: T, _ offset: Int) { raw.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self) }
            typealias O = SymbolCacheLayout.Offset
            for (i, b) in SymbolCacheLayout.magic.enumerated() { raw[i] = b }
            put(SymbolCacheVersions.current, O.version)
            put((file.machO != nil ? SymbolCacheLayout.Flag.machO : 0) | (wide ? SymbolCacheLayout.Flag.wideStarts : 0) | recorded.flags, O.flags)
            put(UInt64(layout.totalSize), O.totalSize)
            put(file.preferredBase, O.preferredBase)
            put(segmentBase, O.segmentBase)
            recorded.write(into: raw)
            put(UInt32(layout.segmentCount), O.segmentCount)
            put(UInt32(layout.chainCount), O.chainCount)
            put(UInt32(layout.frameCount), O.frameCount)
            put(UInt32(layout.functionCount), O.functionCount)
            put(UInt32(layout.stringCount), O.stringCount)
            put(UInt64(layout.blobSize), O.blobSize)
            let arch = Array(file.architecture.name.utf8.prefix(SymbolCacheLayout.maxArchName))
            raw[O.archName] = UInt8(arch.count)
            for (i, b) in arch.enumerated() { raw[O.archName + 1 + i] = b }
            for (i, s) in starts.enumerated() {
                if wide { put(s, layout.startsOffset + i * 8) } else { put(UInt32(s - segmentBase), layout.startsOffset + i * 4) }
            }
            for (i, c) in chains.enumerated() { put(c, layout.chainOfSegmentOffset + i * 4) }
            for (i, c) in chainStarts.enumerated() { put(c, layout.chainStartsOffset + i * 4) }
            func copy(_ bytes: [UInt8], _ offset: Int) {
                bytes.withUnsafeBytes { src in
                    if let base = src.baseAddress { (raw.baseAddress! + offset).copyMemory(from: base, byteCount: src.count) }
                }
            }
            copy(frameRecords, layout.framesOffset)
            copy(functionRecords, layout.functionsOffset)
            copy(refs, layout.stringRefsOffset)
            copy(blob, layout.blobOffset)
            let body = UnsafeRawBufferPointer(rebasing: raw[SymbolCacheLayout.headerSize...])
            put(SymbolCacheChecksum.crc32(body), O.bodyCRC)
            put(SymbolCacheChecksum.crc32(UnsafeRawBufferPointer(rebasing: raw[..<SymbolCacheLayout.headerSize])), O.headerCRC)
        }
        return out
    }

    private mutating func chainID(_ frames: [SourceFrame], path: String) throws(SymbolCacheError) -> UInt32 {
        if let id = chainIDs[frames] { return id }
        let id = UInt32(chainStarts.count - 1)
        for f in frames {
            let function = functionID(FunctionKey(symbol: f.symbol, functionStart: f.functionStart, fromSymbolTableOnly: f.fromSymbolTableOnly))
            let file = f.file.map { intern($0) } ?? SymbolCacheLayout.none
            guard let line = Int32(exactly: f.line), let column = Int32(exactly: f.column) else {
                throw .unwritable(path: path, reason: "line \(f.line) or column \(f.column) out of range")
            }
            Self.append(function, to: &frameRecords)
            Self.append(file, to: &frameRecords)
            Self.append(UInt32(bitPattern: line), to: &frameRecords)
            Self.append(UInt32(bitPattern: column), to: &frameRecords)
            frameCount += 1
        }
        chainStarts.append(UInt32(frameCount))
        chainIDs[frames] = id
        return id
    }

    /// What the levels of one function share, stored once.
    private struct FunctionKey: Hashable {
        var symbol: String?
        var functionStart: UInt64?
        var fromSymbolTableOnly: Bool
    }

    private mutating func functionID(_ key: FunctionKey) -> UInt32 {
        if let id = functionIDs[key] { return id }
        let id = UInt32(functionCount)
        var flags: UInt32 = 0
        if key.functionStart != nil { flags |= FunctionRecord.Flag.hasFunctionStart }
        if key.fromSymbolTableOnly { flags |= FunctionRecord.Flag.fromSymbolTableOnly }
        let symbol = key.symbol.map { intern($0) } ?? SymbolCacheLayout.none
        let (full, simplified) = key.symbol.map { demangledIDs($0) } ?? (SymbolCacheLayout.none, SymbolCacheLayout.none)
        withUnsafeBytes(of: (key.functionStart ?? 0).littleEndian) { functionRecords += $0 }
        for field in [symbol, full, simplified, flags] { Self.append(field, to: &functionRecords) }
        functionCount += 1
        functionIDs[key] = id
        return id
    }

    /// Both demangled names of `symbol`, demangled once per distinct symbol.
    private mutating func demangledIDs(_ symbol: String) -> (UInt32, UInt32) {
        if let hit = names[symbol] { return (hit.full, hit.simplified) }
        if let family = Demangler.family(of: symbol) { usedDemanglers.insert(family) }
        let full = intern(Demangler.demangle(symbol, style: .full))
        let simplified = intern(Demangler.demangle(symbol, style: .simplified))
        names[symbol] = (full, simplified)
        return (full, simplified)
    }

    private mutating func intern(_ s: String) -> UInt32 {
        if let id = stringIDs[s] { return id }
        let id = UInt32(strings.count)
        strings.append(s)
        stringIDs[s] = id
        return id
    }

    private static func append(_ value: UInt32, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out += $0 }
    }
}
