/// Where everything lies in a symcache file (format version 2, `SymbolCacheVersions`), little-endian.
///
/// ```
/// header (256 bytes)
///   0  magic "STKSYMC\0"          8  version u32         12 flags u32 (see `Flag`)
///   16 total size u64             24 header CRC-32 (this field as 0)   28 body CRC-32
///   32 preferred base u64         40 segment base u64
///   48 source size u64            56 source mtime ns i64               64 source inode u64
///   72 segments u32  76 chains u32  80 frames u32  84 strings u32      88 blob bytes u64
///   96 functions u32              100 arch name: length u8, then up to 27 bytes
///   128 executable size u64       136 executable mtime ns i64          144 executable inode u64
///   152 zero (8 bytes)
///   160 Swift demangler: length u8, then up to 47 bytes (`DemanglerIdentity.bytes`)
///   208 C++ demangler: length u8, then up to 47 bytes
/// body: each section starts 8-aligned, in this order, its size fixed by the counts above
///   segment starts   N × u32 (offset from the segment base) or N × u64 with flag 2; ascending
///   segment chains   N × u32: chain index, or 0xFFFF_FFFF for "no answer"
///   chain starts     (C+1) × u32: chain i is frames [start[i], start[i+1]), innermost first
///   frames           F × 16 bytes (see `FrameRecord`): function, file, line, column
///   functions        G × 24 bytes (see `FunctionRecord`): names, start, flags; shared by frames
///   string refs      S × (offset u32, length u32; bit 31 of length: needs terminal escaping)
///   string blob      the UTF-8 bytes
/// ```
///
/// No section offset is stored: each follows from the counts, so there is no offset to corrupt,
/// and the total size they add up to must equal both the header's and the file's.
struct SymbolCacheLayout: Equatable {
    static let magic: [UInt8] = Array("STKSYMC\0".utf8)
    static let headerSize = 256
    static let frameRecordSize = 16
    static let functionRecordSize = 24
    static let none: UInt32 = 0xFFFF_FFFF
    static let escapeBit: UInt32 = 0x8000_0000
    static let maxArchName = 27

    enum Flag {
        static let machO: UInt32 = 1
        static let wideStarts: UInt32 = 2
        /// An executable was given beside the debug file: its identity is at 128.
        static let withExecutable: UInt32 = 4
        /// Some names went through the Swift demangler / the C++ one: its identity is recorded.
        static let swiftNames: UInt32 = 8
        static let cxxNames: UInt32 = 16
        static let known: UInt32 = 31
    }

    enum Offset {
        static let version = 8, flags = 12, totalSize = 16, headerCRC = 24, bodyCRC = 28
        static let preferredBase = 32, segmentBase = 40
        static let sourceSize = 48, sourceMtime = 56, sourceInode = 64
        static let segmentCount = 72, chainCount = 76, frameCount = 80, stringCount = 84, blobSize = 88
        static let functionCount = 96, archName = 100
        static let executableSize = 128, executableMtime = 136, executableInode = 144
        static let swiftDemangler = 160, cxxDemangler = 208
    }

    let segmentCount: Int
    let chainCount: Int
    let frameCount: Int
    let functionCount: Int
    let stringCount: Int
    let blobSize: Int
    let wideStarts: Bool

    // Stored, not computed: every lookup reads several of them per frame, and working each out
    // from the counts again showed in a batch's profile (`make bench`, the lookup part).
    let startsOffset: Int
    let chainOfSegmentOffset: Int
    let chainStartsOffset: Int
    let framesOffset: Int
    let functionsOffset: Int
    let stringRefsOffset: Int
    let blobOffset: Int
    let totalSize: Int

    init(segmentCount: Int, chainCount: Int, frameCount: Int, functionCount: Int, stringCount: Int, blobSize: Int, wideStarts: Bool) {
        self.segmentCount = segmentCount
        self.chainCount = chainCount
        self.frameCount = frameCount
        self.functionCount = functionCount
        self.stringCount = stringCount
        self.blobSize = blobSize
        self.wideStarts = wideStarts
        startsOffset = Self.headerSize
        chainOfSegmentOffset = Self.align(startsOffset + segmentCount * (wideStarts ? 8 : 4))
        chainStartsOffset = Self.align(chainOfSegmentOffset + segmentCount * 4)
        framesOffset = Self.align(chainStartsOffset + (chainCount + 1) * 4)
        functionsOffset = framesOffset + frameCount * Self.frameRecordSize
        stringRefsOffset = functionsOffset + functionCount * Self.functionRecordSize
        blobOffset = stringRefsOffset + stringCount * 8
        totalSize = Self.align(blobOffset + blobSize)
    }

    static func align(_ n: Int) -> Int { (n + 7) & ~7 }
}
