/// The methods a compressed ELF section (`SHF_COMPRESSED`) may use, by their `ch_type`: both
/// are inflated here, through one call, by every reader of debug sections (`ElfFile`).
public enum SectionCompression: UInt32, Sendable, CustomStringConvertible {
    /// `ELFCOMPRESS_ZLIB`
    case zlib = 1
    /// `ELFCOMPRESS_ZSTD`
    case zstd = 2

    public var description: String {
        switch self {
        case .zlib: "zlib"
        case .zstd: "zstd"
        }
    }

    /// Decompresses `input` into exactly `output.count` bytes, the size the section's
    /// compression header declares; any other size is refused as `sizeMismatch`.
    public func decompress(_ input: UnsafeRawBufferPointer, exactlyInto output: UnsafeMutableRawBufferPointer) throws(CompressionError) {
        switch self {
        case .zlib: try Zlib.inflate(input, exactlyInto: output)
        case .zstd: try Zstd.decompress(input, exactlyInto: output)
        }
    }
}
