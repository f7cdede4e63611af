import Compression

/// Strings laid end to end, cut at string ends into blocks of about
/// `SymbolCacheLayout.stringBlockSize` bytes, each compressed alone with zstd: what a symcache
/// stores of its strings. Made in parts (the builder's strings, the demangling thread's) and
/// joined, so neither part is copied into the other uncompressed.
struct CompressedStrings {
    var compressed: [UInt8] = []
    /// Each block's compressed end and end, counted from the start of these strings.
    var blocks: [(compressedEnd: Int, end: Int)] = []
    /// The strings' bytes, uncompressed.
    var size = 0

    /// `blob`'s strings, which end where `ends` say (bit 31 ignored).
    init(_ blob: [UInt8], ends: [UInt32]) throws(CompressionError) {
        size = blob.count
        var start = 0
        for e in ends {
            let end = Int(e & ~SymbolCacheLayout.escapeBit)
            if end - start >= SymbolCacheLayout.stringBlockSize {
                try cut(blob, start, end)
                start = end
            }
        }
        if blob.count > start { try cut(blob, start, blob.count) }
    }

    init() {}

    private mutating func cut(_ blob: [UInt8], _ start: Int, _ end: Int) throws(CompressionError) {
        let result = blob.withUnsafeBytes { raw in
            Result { () throws(CompressionError) in try Zstd.compress(UnsafeRawBufferPointer(rebasing: raw[start..<end]), level: Self.level) }
        }
        compressed += try result.get()
        blocks.append((compressed.count, end))
    }

    /// `other` after these strings.
    mutating func append(_ other: CompressedStrings) {
        let (compressedBase, base) = (compressed.count, size)
        compressed += other.compressed
        blocks += other.blocks.map { ($0.compressedEnd + compressedBase, $0.end + base) }
        size += other.size
    }

    /// zstd's fastest level: higher ones shrink names by a few percent and cost a multiple of
    /// the time (`make bench`, symcache build).
    static let level: Int32 = 1
}
