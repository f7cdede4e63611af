/// Where everything lies in a symcache file (format version 4, `SymbolCacheVersions`), little-endian.
///
/// ```
/// header (256 bytes)
///   0  magic "STKSYMC\0"          8  version u32         12 flags u32 (see `Flag`)
///   16 total size u64             24 header CRC-32 (this field as 0)   28 body CRC-32
///   32 preferred base u64         40 compressed string bytes u64
///   48 source size u64            56 source mtime ns i64               64 source inode u64
///   72 segments u32  76 blocks u32  80 callers u32  84 strings u32     88 string bytes u64
///   96 functions u32              100 arch name: length u8, then up to 23 bytes
///   124 string blocks u32
///   128 executable size u64       136 executable mtime ns i64          144 executable inode u64
///   152 segment stream bytes u64
///   160 Swift demangler: length u8, then up to 47 bytes (`DemanglerIdentity.bytes`)
///   208 C++ demangler: length u8, then up to 47 bytes
/// body: each section starts 8-aligned, in this order, its size fixed by the counts above
///   block starts     B × u64: the first segment start of each block of `SegmentCoding.blockLength`
///   block offsets    B × u32: where each block's segments begin in the stream
///   segment stream   the segments, delta-coded block by block (see `SegmentCoding`)
///   callers          C × 20 bytes (see `CallerRecord`): the outer levels of inlined code
///   functions        G × 20 bytes (see `FunctionRecord`): start, names, flags
///   string ends      S × u32: string i is bytes [end(i-1), end(i)) of the strings laid end to
///                    end; bit 31: needs terminal escaping
///   string blocks    N × (compressed end u32, end u32): the strings cut into blocks of about
///                    `stringBlockSize` bytes at string ends, each compressed alone
///   compressed       the blocks, each one zstd frame
/// ```
///
/// No section offset is stored: each follows from the counts, so there is no offset to corrupt,
/// and the total size they add up to must equal both the header's and the file's.
struct SymbolCacheLayout: Equatable {
    static let magic: [UInt8] = Array("STKSYMC\0".utf8)
    static let headerSize = 256
    static let callerRecordSize = 20
    static let functionRecordSize = 20
    /// Strings are compressed in blocks of about this many bytes: a lookup decompresses only the
    /// blocks its names are in, and names compress several times over (`make bench`, size).
    static let stringBlockSize = 64 << 10
    static let none: UInt32 = 0xFFFF_FFFF
    static let escapeBit: UInt32 = 0x8000_0000
    static let maxArchName = 23

    enum Flag {
        static let machO: UInt32 = 1
        /// An executable was given beside the debug file: its identity is at 128.
        static let withExecutable: UInt32 = 4
        /// Some names went through the Swift demangler / the C++ one: its identity is recorded.
        static let swiftNames: UInt32 = 8
        static let cxxNames: UInt32 = 16
        static let known: UInt32 = 29
    }

    enum Offset {
        static let version = 8, flags = 12, totalSize = 16, headerCRC = 24, bodyCRC = 28
        static let preferredBase = 32, compressedSize = 40
        static let sourceSize = 48, sourceMtime = 56, sourceInode = 64
        static let segmentCount = 72, blockCount = 76, callerCount = 80, stringCount = 84, blobSize = 88
        static let functionCount = 96, archName = 100, stringBlockCount = 124
        static let executableSize = 128, executableMtime = 136, executableInode = 144
        static let streamSize = 152, swiftDemangler = 160, cxxDemangler = 208
    }

    let segmentCount: Int
    let blockCount: Int
    let streamSize: Int
    let callerCount: Int
    let functionCount: Int
    let stringCount: Int
    /// The strings' bytes end to end, uncompressed.
    let blobSize: Int
    let stringBlockCount: Int
    let compressedSize: Int

    // Stored, not computed: every lookup reads several of them per frame, and working each out
    // from the counts again showed in a batch's profile (`make bench`, the lookup part).
    let blockStartsOffset: Int
    let blockOffsetsOffset: Int
    let streamOffset: Int
    let callersOffset: Int
    let functionsOffset: Int
    let stringEndsOffset: Int
    let stringBlocksOffset: Int
    let compressedOffset: Int
    let totalSize: Int

    /// Counts as read from a header are each at most 32 bits (the stream and blob sizes are
    /// bounded by the caller), so no sum here can overflow.
    init(
        segmentCount: Int, blockCount: Int, streamSize: Int, callerCount: Int, functionCount: Int, stringCount: Int, blobSize: Int,
        stringBlockCount: Int, compressedSize: Int
    ) {
        self.segmentCount = segmentCount
        self.blockCount = blockCount
        self.streamSize = streamSize
        self.callerCount = callerCount
        self.functionCount = functionCount
        self.stringCount = stringCount
        self.blobSize = blobSize
        self.stringBlockCount = stringBlockCount
        self.compressedSize = compressedSize
        blockStartsOffset = Self.headerSize
        blockOffsetsOffset = blockStartsOffset + blockCount * 8
        streamOffset = Self.align(blockOffsetsOffset + blockCount * 4)
        callersOffset = Self.align(streamOffset + streamSize)
        functionsOffset = Self.align(callersOffset + callerCount * Self.callerRecordSize)
        stringEndsOffset = functionsOffset + functionCount * Self.functionRecordSize
        stringBlocksOffset = stringEndsOffset + stringCount * 4
        compressedOffset = stringBlocksOffset + stringBlockCount * 8
        totalSize = Self.align(compressedOffset + compressedSize)
    }

    static func align(_ n: Int) -> Int { (n + 7) & ~7 }
}
