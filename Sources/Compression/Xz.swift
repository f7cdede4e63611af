import StacklineLzma

/// xz over the system liblzma: MiniDebugInfo, the `.gnu_debugdata` section Fedora and RHEL put
/// into every binary (an xz-compressed ELF file holding a symbol table).
public enum Xz {
    /// What liblzma may use to decode: `xz -9` needs 65 MiB.
    static let decoderMemory: UInt64 = 128 << 20

    /// Decodes one xz stream into at most `limit` bytes; more is refused as `tooLarge`.
    /// Streamed (liblzma's whole-buffer call reports neither how far it got nor whether the
    /// input or the output ran short).
    public static func decompress(_ input: UnsafeRawBufferPointer, limit: Int) throws(CompressionError) -> [UInt8] {
        var stream = lzma_stream()
        guard lzma_stream_decoder(&stream, decoderMemory, 0) == LZMA_OK else { throw .corrupt("liblzma could not start a decoder") }
        defer { lzma_end(&stream) }
        stream.next_in = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        stream.avail_in = input.count
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let (rc, produced) = chunk.withUnsafeMutableBufferPointer { out in
                stream.next_out = out.baseAddress
                stream.avail_out = out.count
                let rc = lzma_code(&stream, LZMA_FINISH)
                return (rc, out.count - stream.avail_out)
            }
            guard produced <= limit - output.count else { throw .tooLarge(limit: limit) }
            output += chunk[..<produced]
            let at = input.count - stream.avail_in
            switch rc {
            case LZMA_STREAM_END: return output
            case LZMA_OK: continue
            case LZMA_BUF_ERROR: throw .truncated
            case LZMA_MEMLIMIT_ERROR: throw .corrupt("xz stream needs more than \(decoderMemory >> 20) MiB to decode")
            case LZMA_FORMAT_ERROR: throw .corrupt("not xz data")
            case LZMA_OPTIONS_ERROR: throw .corrupt("unsupported xz options")
            case LZMA_DATA_ERROR: throw .corruptAt(offset: at, of: input.count, "xz data corrupt")
            default: throw .corrupt("liblzma error \(rc.rawValue)")
            }
        }
    }
}
