import StacklineZstd

/// zstd over the system libzstd: the sections of ELF files compressed with `ELFCOMPRESS_ZSTD`
/// (`objcopy --compress-debug-sections=zstd`, `ld --compress-debug-sections=zstd`).
public enum Zstd {
    /// Decompresses `input` (one or more zstd frames) into exactly `output.count` bytes.
    ///
    /// One call into libzstd's whole-buffer decoder, which writes straight into `output` with no
    /// window buffer of its own. Input it rejects is decoded again by the streaming decoder, which
    /// says how far into the input the damage is: bad input is rare, and its position is worth
    /// the second pass (as in `Zlib.inflate`).
    public static func decompress(_ input: UnsafeRawBufferPointer, exactlyInto output: UnsafeMutableRawBufferPointer) throws(CompressionError) {
        guard let decoder = Decoder() else { throw .corrupt("out of memory for a zstd decoder") }
        try decoder.decompress(input, exactlyInto: output)
    }

    /// A zstd decoding context kept for many inputs: creating one costs more than decoding a
    /// small frame (`make bench`, the lookup part: a symcache's string blocks). One user at a time.
    public final class Decoder {
        private let context: OpaquePointer

        public init?() {
            guard let context = ZSTD_createDCtx() else { return nil }
            self.context = context
        }

        deinit { ZSTD_freeDCtx(context) }

        /// `Zstd.decompress(_:exactlyInto:)` with this context.
        public func decompress(_ input: UnsafeRawBufferPointer, exactlyInto output: UnsafeMutableRawBufferPointer) throws(CompressionError) {
            try Zstd.decompress(input, exactlyInto: output, context: context)
        }
    }

    private static func decompress(
        _ input: UnsafeRawBufferPointer, exactlyInto output: UnsafeMutableRawBufferPointer, context: OpaquePointer
    ) throws(CompressionError) {
        ZSTD_DCtx_reset(context, ZSTD_reset_session_only)
        let made = ZSTD_decompressDCtx(context, output.baseAddress, output.count, input.baseAddress, input.count)
        if ZSTD_isError(made) == 0 {
            guard made == output.count else { throw .sizeMismatch(declared: output.count, actual: made) }
            return
        }
        ZSTD_DCtx_reset(context, ZSTD_reset_session_only)
        try locateDamage(input, into: output, with: context)
        // The streaming decoder accepted what the whole-buffer one refused: say what it said.
        throw .corrupt(errorName(made))
    }

    /// The streaming decoder over the same input: throws where it stops.
    private static func locateDamage(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, with context: OpaquePointer
    ) throws(CompressionError) {
        // Fed in small pieces: zstd checks a block once all of it has arrived, so where it stops
        // is the end of the damaged block, to within a piece.
        let piece = 64
        var source = ZSTD_inBuffer(src: input.baseAddress, size: min(piece, input.count), pos: 0)
        var sink = ZSTD_outBuffer(dst: output.baseAddress, size: output.count, pos: 0)
        while true {
            if source.pos == source.size && source.size < input.count { source.size = min(source.size + piece, input.count) }
            let before = (source.pos, sink.pos)
            let rc = ZSTD_decompressStream(context, &sink, &source)
            if ZSTD_isError(rc) != 0 {
                // Also when a frame header states a larger size than the output holds.
                if ZSTD_getErrorCode(rc) == ZSTD_error_dstSize_tooSmall {
                    throw .sizeMismatch(declared: output.count, actual: nil)
                }
                throw .corruptAt(offset: source.pos, of: input.count, errorName(rc))
            }
            if rc == 0 && source.pos == input.count {
                if sink.pos != sink.size { throw .sizeMismatch(declared: output.count, actual: sink.pos) }
                return
            }
            if (source.pos, sink.pos) == before && source.size == input.count {
                // No progress: the output is full while input remains, or the input ran out mid-frame.
                if sink.pos == sink.size { throw .sizeMismatch(declared: output.count, actual: nil) }
                throw .truncated
            }
        }
    }

    private static func errorName(_ code: Int) -> String { String(cString: ZSTD_getErrorName(code)) }
}

extension Zstd {
    /// `input` as one zstd frame at `level`, its content size recorded in the frame header.
    public static func compress(_ input: UnsafeRawBufferPointer, level: Int32) throws(CompressionError) -> [UInt8] {
        guard let context = ZSTD_createCCtx() else { throw .corrupt("out of memory for a zstd encoder") }
        defer { ZSTD_freeCCtx(context) }
        let bound = ZSTD_compressBound(input.count)
        var out = [UInt8](repeating: 0, count: bound)
        let made = out.withUnsafeMutableBytes { ZSTD_compressCCtx(context, $0.baseAddress, $0.count, input.baseAddress, input.count, level) }
        guard ZSTD_isError(made) == 0 else { throw .corrupt(errorName(made)) }
        out.removeLast(out.count - made)
        return out
    }
}
