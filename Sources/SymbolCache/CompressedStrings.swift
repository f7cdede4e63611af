import Compression
import ReportModel

/// Strings laid end to end, cut at string ends into blocks of about
/// `SymbolCacheLayout.stringBlockSize` bytes, each compressed alone with zstd as soon as it is
/// full: what a symcache stores of its strings, made without ever holding them all
/// uncompressed. Made in parts (the builder's strings, the demangling thread's) and joined.
struct CompressedStrings {
    private(set) var compressed: [UInt8] = []
    /// Each block's compressed end and end, counted from the start of these strings.
    private(set) var blocks: [(compressedEnd: Int, end: Int)] = []
    /// The strings' bytes, uncompressed: where the next string starts.
    private(set) var size = 0
    /// The bytes of the block being filled.
    private var pending: [UInt8] = []
    /// Set when zstd failed (it fails only without memory): the symcache is not written.
    private(set) var failed = false

    /// Appends `s`; returns where it ends.
    mutating func append(_ s: String) -> Int {
        pending += s.utf8
        size += s.utf8.count
        if pending.count >= SymbolCacheLayout.stringBlockSize { cut() }
        return size
    }

    /// Compresses what is left: call once, after the last `append`.
    mutating func finish() {
        if !pending.isEmpty { cut() }
    }

    private mutating func cut() {
        let result = pending.withUnsafeBytes { raw in
            Result { () throws(CompressionError) in try Zstd.compress(raw, level: Self.level) }
        }
        switch result {
        case .success(let block): compressed += block
        case .failure: failed = true
        }
        blocks.append((compressed.count, size))
        pending.removeAll(keepingCapacity: true)
    }

    /// `other` (finished) after these strings (finished).
    mutating func append(_ other: CompressedStrings) {
        let (compressedBase, base) = (compressed.count, size)
        compressed += other.compressed
        blocks += other.blocks.map { ($0.compressedEnd + compressedBase, $0.end + base) }
        size += other.size
        failed = failed || other.failed
    }

    /// zstd's fastest level: higher ones shrink names by a few percent and cost a multiple of
    /// the time (`make bench`, symcache build).
    static let level: Int32 = 1
}

/// Strings numbered in the order they come, each end stored as the symcache stores it (bit 31:
/// needs terminal escaping), compressed as they come.
struct StringRun {
    private(set) var strings = CompressedStrings()
    private(set) var ends: [UInt32] = []

    /// Appends `s`; returns its index in this run.
    mutating func append(_ s: String) -> UInt32 {
        let index = UInt32(truncatingIfNeeded: ends.count)
        // The builder checks the whole size before it writes.
        let end = UInt32(truncatingIfNeeded: min(strings.append(s), Int(SymbolCacheLayout.escapeBit) - 1))
        ends.append(end | (CachedString.needsEscaping(s) ? SymbolCacheLayout.escapeBit : 0))
        return index
    }

    mutating func finish() { strings.finish() }
}
