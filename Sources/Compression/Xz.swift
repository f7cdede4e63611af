import StacklineLzma

/// xz over the system liblzma: MiniDebugInfo, the `.gnu_debugdata` section Fedora and RHEL put
/// into every binary (an xz-compressed ELF file holding a symbol table).
public enum Xz {
    /// What liblzma may use to decode: `xz -9` needs 65 MiB.
    static let decoderMemory: UInt64 = 128 << 20

    /// Decodes one xz stream into at most `limit` bytes; more is refused as `tooLarge`.
    /// MiniDebugInfo is small (tens of KB), so a whole-buffer decode that starts at eight times
    /// the input and is redone fourfold larger when short costs little.
    public static func decompress(_ input: UnsafeRawBufferPointer, limit: Int) throws(CompressionError) -> [UInt8] {
        var capacity = min(limit, max(input.count.multipliedReportingOverflow(by: 8).partialValue, 4096))
        while true {
            var output = [UInt8](repeating: 0, count: capacity)
            var memory = decoderMemory
            var consumed = 0
            var made = 0
            let rc = output.withUnsafeMutableBufferPointer { out in
                lzma_stream_buffer_decode(
                    &memory, 0, nil, input.baseAddress?.assumingMemoryBound(to: UInt8.self), &consumed, input.count,
                    out.baseAddress, &made, out.count)
            }
            switch rc {
            case LZMA_OK:
                output.removeSubrange(made...)
                return output
            case LZMA_BUF_ERROR where made == capacity:
                guard capacity < limit else { throw .tooLarge(limit: limit) }
                capacity = capacity > limit / 4 ? limit : capacity * 4
            case LZMA_BUF_ERROR: throw .truncated
            case LZMA_MEMLIMIT_ERROR: throw .corrupt("xz stream needs more than \(decoderMemory >> 20) MiB to decode")
            case LZMA_FORMAT_ERROR: throw .corrupt("not xz data")
            case LZMA_OPTIONS_ERROR: throw .corrupt("unsupported xz options")
            case LZMA_DATA_ERROR: throw .corruptAt(offset: consumed, of: input.count, "xz data corrupt")
            default: throw .corrupt("liblzma error \(rc.rawValue)")
            }
        }
    }
}
