import Compression
import DebugInfo
import Demangling
import ReportModel
import SystemCalls
#if canImport(Glibc)
import Glibc
#endif

/// A debug file's lookups precomputed: a versioned, checked, memory-mapped index.
///
/// Opening maps the file read-only, checks the header, the size, a CRC-32 of every byte and
/// every cross-reference (string, function and caller indexes, every block's segments); after
/// that a lookup is one binary search over the block starts, the decoding of one block and a
/// walk of its callers, reading only the
/// mapped pages it needs. Layout: `SymbolCacheLayout`, and docs/symcache.md.
///
/// Not thread-safe (it keeps the string blocks it decompressed): one owner at a time, as `DebugFile`.
public final class SymbolCache {
    /// The last of `SymbolCacheVersions.history`; other versions are rebuilt.
    public static var formatVersion: UInt32 { SymbolCacheVersions.current }
    /// How many answer boundaries a debug file needs before its build sweeps them in two parts
    /// at once (`SymbolCacheBuilder`): tests check their fixtures reach it.
    public static var twoPartSweepMinimum: Int { 2 * SymbolCacheBuilder.minimumPartSize }
    /// The file name extension beside the debug file in the store.
    public static let fileExtension = "symcache"

    /// Where the image expects to be loaded (as `DebugFile.preferredBase`).
    public let preferredBase: UInt64
    /// As `DebugFile.architecture`.
    public let architecture: Arch
    /// Built from a Mach-O slice (its addresses may carry pointer-authentication bits).
    public let isMachO: Bool
    /// Address intervals with their own answer (after merging equal neighbours).
    public var segmentCount: Int { layout.segmentCount }
    /// Distinct function records (a name, a start, flags).
    public var functionCount: Int { layout.functionCount }

    private let mapping: MappedFile
    private let bytes: UnsafeRawBufferPointer
    private let layout: SymbolCacheLayout
    /// Each block's first segment start, read at open: the search for the block runs in memory.
    private var blockStarts: [UInt64] = []
    /// Where each string block ends among the strings laid end to end, read at open.
    private var stringBlockEnds: [Int] = []
    /// String blocks decompressed so far (nil: not yet), and their bytes in all.
    private var stringBlocks: [UnsafeMutableRawBufferPointer?] = []
    private var decompressedBytes = 0
    private lazy var decoder = Zstd.Decoder()
    /// A bound on `stringBlocks`, which are all dropped at the start of a visit once they hold
    /// more: a batch over a whole large binary touches every block, a crash a few dozen.
    static let decompressedLimit = 64 << 20
    /// Simplified Swift names derived so far, by their symbol's string index, and their bytes
    /// in all: a worker keeps a symcache open across reports (`OpenDebugFiles`), and a crash
    /// batch repeats the same few hundred functions.
    private var simplifiedNames: [UInt32: DerivedName] = [:]
    private var simplifiedBytes = 0
    /// A bound on `simplifiedNames`, dropped at the start of a visit once they hold more (never
    /// during one: its views point into them).
    static let simplifiedLimit = 16 << 20

    /// Builds the index of `file` and writes it atomically to `path` (a temporary name in the
    /// same directory, then rename), recording `key` with the demanglers the names went through.
    ///
    /// Concurrent writers of one path each write their own temporary file and rename it into
    /// place: readers see one whole symcache or another, both correct. No fsync: a file torn by
    /// a crash fails its checksum at open and is rebuilt.
    public static func write(from file: DebugFile, key: SymbolCacheKey, to path: String) throws(SymbolCacheError) {
        var parts = try SymbolCacheBuilder.build(from: file, key: key)
        var random = SystemRandomNumberGenerator()
        let temporary = "\(path).\(getpid()).\(String(random.next() as UInt64, radix: 36)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, PrivateFiles.fileMode)
        guard fd >= 0 else { throw .unwritable(path: path, reason: SystemCallError.reason(errno: errno)) }
        var written: Result<Void, SystemCallError> = .success(())
        for part in parts {
            written = part.withUnsafeBytes { raw in Result { () throws(SystemCallError) in try SystemCall.writeAll(fd, raw, path: temporary) } }
            if case .failure = written { break }
        }
        close(fd)
        // The build's tables are freed by now: back to the system before the caller maps and
        // checks what was written (`make bench`, the symcache build's peak RSS).
        parts = []
        SystemCall.returnFreedMemory()
        do throws(SystemCallError) {
            try written.get()
            try SystemCall.check("rename", path: path) { rename(temporary, path) }
        } catch {
            unlink(temporary)
            throw .unwritable(path: path, reason: error.reason)
        }
    }

    /// Maps and checks the symcache at `path`, whose recorded key must match `key`
    /// (`SymbolCacheKey`: the same debug file and executable, and the same demanglers for the
    /// names it holds).
    public init(path: String, expecting key: SymbolCacheKey) throws(SymbolCacheError) {
        let file: RegularFile
        do { file = try RegularFile(path: path, followingLinks: false) } catch {
            throw .unreadable(path: path, reason: error.reason)
        }
        // Another version is told apart before its size: a version-1 header is shorter.
        if file.size >= 12, let start = try? file.read(at: 0, count: 12), Array(start.prefix(8)) == SymbolCacheLayout.magic {
            let version = UInt32(start[8]) | UInt32(start[9]) << 8 | UInt32(start[10]) << 16 | UInt32(start[11]) << 24
            guard version == Self.formatVersion else { throw .unsupportedVersion(path: path, found: version) }
        }
        guard file.size >= UInt64(SymbolCacheLayout.headerSize) else {
            if file.size >= 8, (try? file.read(at: 0, count: 8)) != SymbolCacheLayout.magic { throw .notASymcache(path: path) }
            throw .truncated(path: path, expected: UInt64(SymbolCacheLayout.headerSize), found: file.size)
        }
        do { mapping = try MappedFile(file: file, writable: false) } catch {
            switch error {
            case .empty: throw .truncated(path: path, expected: UInt64(SymbolCacheLayout.headerSize), found: 0)
            case .unreadable(_, let reason): throw .unreadable(path: path, reason: reason)
            }
        }
        let bytes = mapping.contents
        self.bytes = bytes
        let header = SymbolCacheHeader(bytes)
        typealias O = SymbolCacheLayout.Offset
        guard bytes.prefix(8).elementsEqual(SymbolCacheLayout.magic) else { throw .notASymcache(path: path) }
        let version: UInt32 = header[O.version]
        guard version == Self.formatVersion else { throw .unsupportedVersion(path: path, found: version) }
        let headerCRC: UInt32 = header[O.headerCRC]
        guard headerCRC == header.checksum() else { throw .checksumMismatch(path: path) }
        let total: UInt64 = header[O.totalSize]
        guard total == UInt64(bytes.count) else {
            if total > UInt64(bytes.count) { throw .truncated(path: path, expected: total, found: UInt64(bytes.count)) }
            throw .corrupt(path: path, detail: "\(bytes.count) bytes where the header says \(total)")
        }
        let bodyCRC: UInt32 = header[O.bodyCRC]
        guard bodyCRC == SymbolCacheChecksum.crc32(UnsafeRawBufferPointer(rebasing: bytes[SymbolCacheLayout.headerSize...])) else {
            throw .checksumMismatch(path: path)
        }
        let flags: UInt32 = header[O.flags]
        guard flags & ~SymbolCacheLayout.Flag.known == 0 else { throw .corrupt(path: path, detail: "unknown flags \(flags)") }
        guard let recorded = SymbolCacheKey(recordedIn: header) else { throw .corrupt(path: path, detail: "a demangler identity longer than its field") }
        if let mismatch = recorded.mismatch(expected: key, path: path) { throw mismatch }
        let segments: UInt32 = header[O.segmentCount], blocks: UInt32 = header[O.blockCount]
        let callers: UInt32 = header[O.callerCount], strings: UInt32 = header[O.stringCount]
        let functions: UInt32 = header[O.functionCount], stringBlockCount: UInt32 = header[O.stringBlockCount]
        let blob: UInt64 = header[O.blobSize], stream: UInt64 = header[O.streamSize], compressed: UInt64 = header[O.compressedSize]
        guard blob < UInt64(SymbolCacheLayout.escapeBit) else { throw .corrupt(path: path, detail: "strings of \(blob) bytes") }
        guard stream <= UInt64(UInt32.max), compressed <= UInt64(UInt32.max) else {
            throw .corrupt(path: path, detail: "a segment stream of \(stream) or compressed strings of \(compressed) bytes")
        }
        let layout = SymbolCacheLayout(
            segmentCount: Int(segments), blockCount: Int(blocks), streamSize: Int(stream), callerCount: Int(callers),
            functionCount: Int(functions), stringCount: Int(strings), blobSize: Int(blob),
            stringBlockCount: Int(stringBlockCount), compressedSize: Int(compressed))
        // Counts are 32-bit, so the sum cannot overflow; it must be the file exactly.
        guard layout.totalSize == bytes.count else {
            throw .corrupt(path: path, detail: "sections add up to \(layout.totalSize) bytes, the file has \(bytes.count)")
        }
        self.layout = layout
        let archLength = Int(bytes[O.archName])
        guard archLength <= SymbolCacheLayout.maxArchName else { throw .corrupt(path: path, detail: "arch name of \(archLength) bytes") }
        architecture = Arch(String(decoding: bytes[(O.archName + 1)..<(O.archName + 1 + archLength)], as: UTF8.self))
        preferredBase = header[O.preferredBase]
        isMachO = flags & SymbolCacheLayout.Flag.machO != 0
        if let problem = SymbolCacheValidation.problem(bytes, layout) { throw .corrupt(path: path, detail: problem) }
        blockStarts = (0..<layout.blockCount).map { u64(layout.blockStartsOffset + $0 * 8) }
        stringBlockEnds = (0..<layout.stringBlockCount).map { Int(u32(layout.stringBlocksOffset + $0 * 8 + 4)) }
        stringBlocks = Array(repeating: nil, count: layout.stringBlockCount)
    }

    deinit {
        forgetStringBlocks()
    }

    /// What is at `address`, innermost inline level first: exactly `DebugFile.frames(at:)`'s
    /// answer, plus the demangled names.
    public func frames(at address: UInt64) -> [CachedFrame] {
        var out: [CachedFrame] = []
        visitFrames(at: address) { f in
            if out.isEmpty { out.reserveCapacity(f.count) }
            out.append(CachedFrame(
                source: SourceFrame(
                    symbol: f.symbol?.string, file: f.file?.string, line: f.line, column: f.column,
                    functionStart: f.functionStart, fromSymbolTableOnly: f.fromSymbolTableOnly),
                fullName: f.fullName?.string, simplifiedName: f.simplifiedName?.string))
        }
        return out
    }

    /// Calls `body` with each level at `address`, innermost first, read in place from the
    /// mapping or from a string block decompressed at its first use (no `String` is made);
    /// returns how many levels there were. The views and their bytes are valid only during the
    /// call.
    @discardableResult
    public func visitFrames<E: Error>(at address: UInt64, _ body: (CachedFrameView) throws(E) -> Void) throws(E) -> Int {
        if decompressedBytes > Self.decompressedLimit { forgetStringBlocks() }
        if simplifiedBytes > Self.simplifiedLimit {
            simplifiedNames.removeAll()
            simplifiedBytes = 0
        }
        guard let answer = answer(at: address) else { return 0 }
        typealias C = CallerRecord.Offset
        var count = 1
        var caller = answer.caller
        while caller != SymbolCacheLayout.none {
            count += 1
            caller = u32(layout.callersOffset + Int(caller) * SymbolCacheLayout.callerRecordSize + C.next)
        }
        try body(view(index: 0, count: count, function: answer.function, file: answer.file, line: answer.line, column: answer.column))
        caller = answer.caller
        var index = 1
        while caller != SymbolCacheLayout.none {
            let record = layout.callersOffset + Int(caller) * SymbolCacheLayout.callerRecordSize
            try body(view(
                index: index, count: count, function: u32(record + C.function), file: u32(record + C.file),
                line: Int32(bitPattern: u32(record + C.line)), column: Int32(bitPattern: u32(record + C.column))))
            caller = u32(record + C.next)
            index += 1
        }
        return count
    }

    private func view(index: Int, count: Int, function: UInt32, file: UInt32, line: Int32, column: Int32) -> CachedFrameView {
        typealias F = FunctionRecord.Offset
        let record = layout.functionsOffset + Int(function) * SymbolCacheLayout.functionRecordSize
        let flags = u32(record + F.flags)
        return CachedFrameView(
            index: index, count: count, file: string(file),
            line: Int(line), column: Int(column),
            functionStart: flags & FunctionRecord.Flag.hasFunctionStart != 0 ? u64(record + F.functionStart) : nil,
            fromSymbolTableOnly: flags & FunctionRecord.Flag.fromSymbolTableOnly != 0, cache: self, function: record)
    }

    /// One of the names of the function record at `function` (`field`: its offset in the record).
    func name(function: Int, field: Int) -> CachedString? {
        string(u32(function + field))
    }

    /// The simplified name of the function record at `function`: its full name unless the
    /// symbol is a Swift name (`Demangler.Family.stylesDiffer`), else the symbol demangled in
    /// that style at its first use, which is exactly what the builder stored before format
    /// version 4.
    func simplifiedName(function: Int) -> CachedString? {
        let id = u32(function + FunctionRecord.Offset.symbol)
        guard let symbol = string(id) else { return nil }
        guard Demangler.family(ofUTF8: symbol.bytes)?.stylesDiffer == true else {
            return name(function: function, field: FunctionRecord.Offset.fullName)
        }
        if let known = simplifiedNames[id] { return known.string }
        let derived = DerivedName(Demangler.demangle(symbol.string, style: .simplified))
        simplifiedNames[id] = derived
        simplifiedBytes += derived.string.bytes.count
        return derived.string
    }

    private func forgetStringBlocks() {
        for case let block? in stringBlocks { block.deallocate() }
        for i in stringBlocks.indices { stringBlocks[i] = nil }
        decompressedBytes = 0
    }

    /// String block `i`, decompressed at its first use. A block whose bytes do not decompress to
    /// its size (a file written with valid checksums by something other than the writer: damage
    /// fails the checksum at open) reads as zeros, never outside its buffer.
    private func stringBlock(_ i: Int) -> UnsafeRawBufferPointer {
        if let block = stringBlocks[i] { return UnsafeRawBufferPointer(block) }
        let start = i == 0 ? 0 : stringBlockEnds[i - 1]
        let size = stringBlockEnds[i] - start
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 8)
        let compressedStart = i == 0 ? 0 : Int(u32(layout.stringBlocksOffset + (i - 1) * 8))
        let compressedEnd = Int(u32(layout.stringBlocksOffset + i * 8))
        let input = UnsafeRawBufferPointer(rebasing: bytes[(layout.compressedOffset + compressedStart)..<(layout.compressedOffset + compressedEnd)])
        let output = UnsafeMutableRawBufferPointer(rebasing: block[..<size])
        do throws(CompressionError) {
            guard let decoder else { throw .corrupt("out of memory for a zstd decoder") }
            try decoder.decompress(input, exactlyInto: output)
        } catch {
            output.initializeMemory(as: UInt8.self, repeating: 0)
        }
        stringBlocks[i] = block
        decompressedBytes += size
        return UnsafeRawBufferPointer(block)
    }

    /// The answer of the segment with the greatest start at or below `address`: a search of the
    /// block starts in memory, then the decoding of one block.
    private func answer(at address: UInt64) -> SegmentAnswer? {
        var lo = 0
        var hi = blockStarts.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if blockStarts[mid] <= address { lo = mid + 1 } else { hi = mid }
        }
        guard lo > 0 else { return nil }
        let block = lo - 1
        let (offset, end) = blockRange(block)
        var found: SegmentAnswer?
        // Validated at open: decoding cannot fail here.
        _ = SegmentCoding.decode(bytes, offset: offset, end: end, firstStart: blockStarts[block], count: blockSegmentCount(block)) { start, answer in
            guard start <= address else { return false }
            found = answer
            return true
        }
        return found
    }

    /// Where block `i`'s bytes lie in the mapping.
    func blockRange(_ i: Int) -> (Int, Int) {
        let offset = layout.streamOffset + Int(u32(layout.blockOffsetsOffset + i * 4))
        let end = i + 1 < layout.blockCount ? layout.streamOffset + Int(u32(layout.blockOffsetsOffset + i * 4 + 4)) : layout.streamOffset + layout.streamSize
        return (offset, end)
    }

    func blockSegmentCount(_ i: Int) -> Int { min(SegmentCoding.blockLength, layout.segmentCount - i * SegmentCoding.blockLength) }

    private func string(_ id: UInt32) -> CachedString? {
        guard id != SymbolCacheLayout.none else { return nil }
        let end = u32(layout.stringEndsOffset + Int(id) * 4)
        let start = id == 0 ? 0 : Int(u32(layout.stringEndsOffset + Int(id) * 4 - 4) & ~SymbolCacheLayout.escapeBit)
        let stop = Int(end & ~SymbolCacheLayout.escapeBit)
        let escaping = end & SymbolCacheLayout.escapeBit != 0
        guard stop > start else { return CachedString(bytes: UnsafeRawBufferPointer(start: nil, count: 0), needsTerminalEscaping: escaping) }
        // The block holding it (validated at open: a string never crosses a block's end).
        var lo = 0
        var hi = stringBlockEnds.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if stringBlockEnds[mid] <= start { lo = mid + 1 } else { hi = mid }
        }
        let blockStart = lo == 0 ? 0 : stringBlockEnds[lo - 1]
        let block = stringBlock(lo)
        return CachedString(bytes: UnsafeRawBufferPointer(rebasing: block[(start - blockStart)..<(stop - blockStart)]), needsTerminalEscaping: escaping)
    }

    // Offsets reaching these were validated at open (`SymbolCacheValidation`); the buffer's own
    // bounds checks stay on in debug builds.
    private func u32(_ offset: Int) -> UInt32 { UInt32(littleEndian: bytes.load(fromByteOffset: offset, as: UInt32.self)) }
    // Unaligned: a function record's start lies at 4 modulo 8 in every other record.
    private func u64(_ offset: Int) -> UInt64 { UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
}

/// A name made at lookup, in memory of its own so its views stay valid until the symcache
/// drops it (`SymbolCache.simplifiedNames`, between visits).
private final class DerivedName {
    let string: CachedString
    private let buffer: UnsafeMutableRawBufferPointer

    init(_ text: String) {
        let utf8 = Array(text.utf8)
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(utf8.count, 1), alignment: 1)
        buffer.copyBytes(from: utf8)
        string = CachedString(bytes: UnsafeRawBufferPointer(rebasing: buffer[..<utf8.count]), needsTerminalEscaping: CachedString.needsEscaping(text))
    }

    deinit {
        buffer.deallocate()
    }
}

extension SymbolCache {
    /// The key a symcache's header records, if `bytes` hold a whole, readable header: lets the
    /// fuzz target and tests open a file whose debug file is not at hand, and tests read what
    /// a store's symcache was built with.
    public static func recordedKey(_ bytes: [UInt8]) -> SymbolCacheKey? {
        guard bytes.count >= SymbolCacheLayout.headerSize else { return nil }
        return bytes.withUnsafeBytes { raw in SymbolCacheKey(recordedIn: SymbolCacheHeader(raw)) }
    }

    /// `bytes` with both checksums recomputed (when a whole header is there): what a fuzzer
    /// needs to reach the structural checks behind them, which damage alone never reaches.
    public static func resealed(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= SymbolCacheLayout.headerSize else { return bytes }
        var out = bytes
        out.withUnsafeMutableBytes { raw in
            typealias O = SymbolCacheLayout.Offset
            let body = SymbolCacheChecksum.crc32(UnsafeRawBufferPointer(rebasing: raw[SymbolCacheLayout.headerSize...]))
            raw.storeBytes(of: body.littleEndian, toByteOffset: O.bodyCRC, as: UInt32.self)
            raw.storeBytes(of: UInt32(0), toByteOffset: O.headerCRC, as: UInt32.self)
            let header = SymbolCacheChecksum.crc32(UnsafeRawBufferPointer(rebasing: raw[..<SymbolCacheLayout.headerSize]))
            raw.storeBytes(of: header.littleEndian, toByteOffset: O.headerCRC, as: UInt32.self)
        }
        return out
    }
}
