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
/// every cross-reference (string, frame and chain indexes); after that a lookup is one binary
/// search over the segment starts and a walk of one chain's frame records, reading only the
/// mapped pages it needs. Layout: `SymbolCacheLayout`, and docs/symcache.md.
public final class SymbolCache {
    /// The last of `SymbolCacheVersions.history`; other versions are rebuilt.
    public static var formatVersion: UInt32 { SymbolCacheVersions.current }
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
    /// Distinct answers stored.
    public var chainCount: Int { layout.chainCount }

    private let mapping: MappedFile
    private let bytes: UnsafeRawBufferPointer
    private let layout: SymbolCacheLayout
    private let segmentBase: UInt64
    /// Every `sampleStride`-th segment start, read at open (see `chain(at:)`).
    private var sampledStarts: [UInt64] = []

    /// Builds the index of `file` and writes it atomically to `path` (a temporary name in the
    /// same directory, then rename), recording `key` with the demanglers the names went through.
    ///
    /// Concurrent writers of one path each write their own temporary file and rename it into
    /// place: readers see one whole symcache or another, both correct. No fsync: a file torn by
    /// a crash fails its checksum at open and is rebuilt.
    public static func write(from file: DebugFile, key: SymbolCacheKey, to path: String) throws(SymbolCacheError) {
        let bytes = try SymbolCacheBuilder.build(from: file, key: key)
        var random = SystemRandomNumberGenerator()
        let temporary = "\(path).\(getpid()).\(String(random.next() as UInt64, radix: 36)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, PrivateFiles.fileMode)
        guard fd >= 0 else { throw .unwritable(path: path, reason: SystemCallError.reason(errno: errno)) }
        let written = bytes.withUnsafeBytes { raw in Result { () throws(SystemCallError) in try SystemCall.writeAll(fd, raw, path: temporary) } }
        close(fd)
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
        let segments: UInt32 = header[O.segmentCount], chains: UInt32 = header[O.chainCount]
        let frames: UInt32 = header[O.frameCount], strings: UInt32 = header[O.stringCount]
        let functions: UInt32 = header[O.functionCount]
        let blob: UInt64 = header[O.blobSize]
        guard blob <= UInt64(UInt32.max) else { throw .corrupt(path: path, detail: "string blob of \(blob) bytes") }
        let layout = SymbolCacheLayout(
            segmentCount: Int(segments), chainCount: Int(chains), frameCount: Int(frames), functionCount: Int(functions),
            stringCount: Int(strings),
            blobSize: Int(blob), wideStarts: flags & SymbolCacheLayout.Flag.wideStarts != 0)
        // Counts are 32-bit, so the sum cannot overflow; it must be the file exactly.
        guard layout.totalSize == bytes.count else {
            throw .corrupt(path: path, detail: "sections add up to \(layout.totalSize) bytes, the file has \(bytes.count)")
        }
        self.layout = layout
        let archLength = Int(bytes[O.archName])
        guard archLength <= SymbolCacheLayout.maxArchName else { throw .corrupt(path: path, detail: "arch name of \(archLength) bytes") }
        architecture = Arch(String(decoding: bytes[(O.archName + 1)..<(O.archName + 1 + archLength)], as: UTF8.self))
        preferredBase = header[O.preferredBase]
        segmentBase = header[O.segmentBase]
        isMachO = flags & SymbolCacheLayout.Flag.machO != 0
        if let problem = SymbolCacheValidation.problem(bytes, layout) { throw .corrupt(path: path, detail: problem) }
        sampledStarts = stride(from: 0, to: layout.segmentCount, by: Self.sampleStride).map(start)
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
    /// mapping (no `String` is made); returns how many levels there were. The views and their
    /// bytes are valid only during the call.
    @discardableResult
    public func visitFrames<E: Error>(at address: UInt64, _ body: (CachedFrameView) throws(E) -> Void) throws(E) -> Int {
        let chain = chain(at: address)
        guard chain != SymbolCacheLayout.none else { return 0 }
        let first = Int(u32(layout.chainStartsOffset + Int(chain) * 4))
        let end = Int(u32(layout.chainStartsOffset + Int(chain) * 4 + 4))
        let count = end - first
        for i in 0..<count {
            let record = layout.framesOffset + (first + i) * SymbolCacheLayout.frameRecordSize
            let function = layout.functionsOffset + Int(u32(record + FrameRecord.Offset.function)) * SymbolCacheLayout.functionRecordSize
            typealias F = FunctionRecord.Offset
            let flags = u32(function + F.flags)
            try body(CachedFrameView(
                index: i, count: count,
                symbol: string(u32(function + F.symbol)),
                fullName: string(u32(function + F.fullName)),
                simplifiedName: string(u32(function + F.simplifiedName)),
                file: string(u32(record + FrameRecord.Offset.file)),
                line: Int(Int32(bitPattern: u32(record + FrameRecord.Offset.line))),
                column: Int(Int32(bitPattern: u32(record + FrameRecord.Offset.column))),
                functionStart: flags & FunctionRecord.Flag.hasFunctionStart != 0 ? u64(function + F.functionStart) : nil,
                fromSymbolTableOnly: flags & FunctionRecord.Flag.fromSymbolTableOnly != 0))
        }
        return count
    }

    /// The chain answering `address`: the segment with the greatest start at or below it.
    ///
    /// Two steps: the in-memory sample of every 256th start (small enough to stay in cache)
    /// picks the block, then a binary search inside that block touches one kilobyte or two of
    /// the mapping instead of ~20 cache lines spread over the whole table.
    private func chain(at address: UInt64) -> UInt32 {
        let n = layout.segmentCount
        guard n > 0, address >= segmentBase else { return SymbolCacheLayout.none }
        let key: UInt64
        if layout.wideStarts {
            key = address
        } else if address - segmentBase > UInt64(UInt32.max) {
            // Every start is below 2^32 past the base: the last segment answers.
            return u32(layout.chainOfSegmentOffset + (n - 1) * 4)
        } else {
            key = address - segmentBase
        }
        var lo = 0
        var hi = sampledStarts.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if sampledStarts[mid] <= key { lo = mid + 1 } else { hi = mid }
        }
        guard lo > 0 else { return SymbolCacheLayout.none }
        // starts[block] <= key; the answer is the last start <= key in this block.
        let block = (lo - 1) * Self.sampleStride
        lo = block + 1
        hi = min(block + Self.sampleStride, n)
        while lo < hi {
            let mid = (lo + hi) >> 1
            if start(mid) <= key { lo = mid + 1 } else { hi = mid }
        }
        return u32(layout.chainOfSegmentOffset + (lo - 1) * 4)
    }

    private static let sampleStride = 256

    /// Segment `i`'s start: an absolute address with wide starts, else an offset from the base.
    private func start(_ i: Int) -> UInt64 {
        layout.wideStarts ? u64(layout.startsOffset + i * 8) : UInt64(u32(layout.startsOffset + i * 4))
    }

    private func string(_ id: UInt32) -> CachedString? {
        guard id != SymbolCacheLayout.none else { return nil }
        let ref = layout.stringRefsOffset + Int(id) * 8
        let offset = Int(u32(ref))
        let length = u32(ref + 4)
        return CachedString(
            bytes: UnsafeRawBufferPointer(rebasing: bytes[(layout.blobOffset + offset)..<(layout.blobOffset + offset + Int(length & ~SymbolCacheLayout.escapeBit))]),
            needsTerminalEscaping: length & SymbolCacheLayout.escapeBit != 0)
    }

    // Offsets reaching these were validated at open (`SymbolCacheValidation`); the buffer's own
    // bounds checks stay on in debug builds.
    private func u32(_ offset: Int) -> UInt32 { UInt32(littleEndian: bytes.load(fromByteOffset: offset, as: UInt32.self)) }
    private func u64(_ offset: Int) -> UInt64 { UInt64(littleEndian: bytes.load(fromByteOffset: offset, as: UInt64.self)) }
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
