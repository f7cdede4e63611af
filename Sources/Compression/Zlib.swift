import Foundation
import StacklineDeflate
import StacklineZlib

/// Why a compressed buffer could not be inflated.
public enum CompressionError: Error, Equatable, CustomStringConvertible {
    /// The output would exceed the caller's limit (a likely decompression bomb).
    case tooLarge(limit: Int)
    /// zlib rejected the data.
    case corrupt(String)
    /// The stream ended before zlib saw its end marker.
    case truncated
    /// The output would be more than `maxRatio` times the input, past `Zlib.ratioFloor`: no
    /// report compresses that well, a bomb does (`Zlib.inflateUntrusted`).
    case ratioTooHigh(maxRatio: Int)
    /// The data is damaged `offset` bytes into its `size` bytes of input.
    case corruptAt(offset: Int, of: Int, String)
    /// The data decompresses to `actual` bytes (nil: more than `declared`) where its container
    /// declared `declared` (an ELF compression header's `ch_size`).
    case sizeMismatch(declared: Int, actual: Int?)

    public var description: String {
        switch self {
        case .corruptAt(let offset, let size, let why): "corrupt at byte \(offset) of \(size): \(why)"
        case .sizeMismatch(let declared, let actual):
            "decompresses to \(actual.map { "\($0) bytes" } ?? "more than \(declared) bytes"), where \(declared) were declared"
        case .tooLarge(let limit): "decompressed size exceeds the limit of \(limit) bytes"
        case .ratioTooHigh(let ratio):
            "inflates more than \(ratio)-fold: a decompression bomb (no report compresses that well)"
        case .corrupt(let why): "corrupt compressed data: \(why)"
        case .truncated: "compressed data is truncated"
        }
    }
}

/// gzip and zlib helpers over the system zlib.
public enum Zlib {
    /// Default cap on decompressed input: reports are small, bombs are not.
    public static let defaultLimit = 64 << 20

    /// True when `data` starts with the gzip magic bytes 1f 8b.
    public static func isGzip(_ data: Data) -> Bool {
        data.count >= 2 && data[data.startIndex] == 0x1f && data[data.startIndex + 1] == 0x8b
    }

    /// Compresses `data` in the zlib format (level 1 through libdeflate, faster than zlib's
    /// deflate: a worker compresses every result, and zlib's deflate was a large part of its
    /// CPU in scripts/bench-queue.sh on 30-frame crashes). Any zlib reads the output.
    public static func compress(_ data: Data) -> Data {
        guard let compressor = CompressorPool.shared.take() else { return compressWithZlib(data) }
        defer { CompressorPool.shared.give(compressor) }
        let bound = libdeflate_zlib_compress_bound(compressor, data.count)
        var out = Data(count: bound)
        let written = out.withUnsafeMutableBytes { dst in
            data.withUnsafeBytes { src in
                libdeflate_zlib_compress(compressor, src.baseAddress, src.count, dst.baseAddress, dst.count)
            }
        }
        // 0 means the bound was too small, which libdeflate's own bound rules out; zlib then.
        guard written > 0 else { return compressWithZlib(data) }
        out.count = written
        return out
    }

    /// zlib's compress2 at the same level: the fallback when no compressor can be allocated.
    static func compressWithZlib(_ data: Data) -> Data {
        var bound = compressBound(uLong(data.count))
        var out = Data(count: Int(bound))
        let rc = out.withUnsafeMutableBytes { dst in
            data.withUnsafeBytes { src in
                compress2(
                    dst.baseAddress!.assumingMemoryBound(to: Bytef.self), &bound,
                    src.baseAddress?.assumingMemoryBound(to: Bytef.self) ?? UnsafePointer(bitPattern: 1)!,
                    uLong(data.count), CompressorPool.level)
            }
        }
        // compress2 can only fail on bad arguments or out of memory; neither depends on input.
        precondition(rc == Z_OK, "compress2 failed: \(rc)")
        out.count = Int(bound)
        return out
    }

    /// Inflates gzip (one or more members) or zlib data into at most `limit` bytes; anything
    /// larger is refused as `tooLarge`, so a bomb costs at most `limit` bytes of memory.
    ///
    /// libdeflate inflates whole buffers at about twice zlib's speed, into a buffer sized from
    /// the gzip trailer (or `limit`, which callers reading stored data set to the exact size)
    /// and grown fourfold up to `limit` when the guess was short. Input libdeflate rejects is
    /// inflated again by zlib's streaming inflate, which tells a truncated stream from a corrupt
    /// one and names what is wrong: bad input is rare, and its message is worth the second pass.
    public static func inflate(_ data: Data, limit: Int = defaultLimit) throws(CompressionError) -> Data {
        guard let decompressor = DecompressorPool.shared.take() else { return try inflateStreaming(data, limit: limit) }
        defer { DecompressorPool.shared.give(decompressor) }
        var capacity = initialCapacity(data, limit: limit)
        while true {
            var output = Data(count: capacity)
            let outcome = output.withUnsafeMutableBytes { out in
                data.withUnsafeBytes { input in inflateMembers(input, into: out, with: decompressor) }
            }
            switch outcome {
            case .inflated(let size):
                output.count = size
                return output
            case .needsSpace:
                guard capacity < limit else { throw .tooLarge(limit: limit) }
                capacity = capacity > limit / 4 ? limit : capacity * 4
            case .rejected:
                return try inflateStreaming(data, limit: limit)
            }
        }
    }

    /// Deflate's own ceiling is 1032-fold (runs of one byte). Real reports stay far below the
    /// bound: gzip -9 of the 27 reports in Tests/Fixtures/wild is at most 16.1-fold (a MetricKit
    /// exception, median 3.6), and a made-up KSCrash report of 10,000 identical frames 281-fold.
    public static let defaultMaxRatio = 300
    /// Output every input may inflate to whatever its ratio: a report this small costs nothing to
    /// inflate, and a tiny input's ratio says little (a 1 KiB report of spaces is legal).
    public static let ratioFloor = 1 << 20

    /// `inflate` for bytes from the network: at most `limit` bytes, and at most `defaultMaxRatio`
    /// times the input (past `ratioFloor`), so a bomb costs a bounded amount of work, not `limit`.
    /// A single gzip member's trailer states its size (ISIZE, modulo 2^32): when that alone is
    /// past either bound, nothing is inflated. A trailer that lies (or several members) is
    /// caught while inflating: the output buffer never grows past the bounds.
    public static func inflateUntrusted(_ data: Data, limit: Int) throws(CompressionError) -> Data {
        let maxRatio = defaultMaxRatio
        let (byRatio, overflow) = data.count.multipliedReportingOverflow(by: maxRatio)
        let cap = min(limit, max(ratioFloor, overflow ? Int.max : byRatio))
        // The true size is the trailer's plus a multiple of 2^32, never less (only a corrupt
        // stream differs, and it is refused either way).
        if let stated = statedSize(data) {
            if stated > limit { throw .tooLarge(limit: limit) }
            if stated > cap { throw .ratioTooHigh(maxRatio: maxRatio) }
        }
        do {
            return try inflate(data, limit: cap)
        } catch .tooLarge {
            throw cap < limit ? .ratioTooHigh(maxRatio: maxRatio) : .tooLarge(limit: limit)
        }
    }

    /// The last gzip member's trailer size field (ISIZE), when `data` is gzip long enough to have one.
    static func statedSize(_ data: Data) -> Int? {
        guard isGzip(data), data.count >= 18 else { return nil }
        return data.suffix(4).reversed().reduce(0) { $0 << 8 | Int($1) }
    }

    /// True when `data` inflates to exactly `size` bytes, as `inflate(data, limit: size)` would
    /// return them, without keeping them: the master checks every result a worker sends this way,
    /// into scratch memory that is neither zeroed nor kept.
    public static func inflatesExactly(_ data: Data, size: Int) -> Bool {
        guard size >= 0 else { return false }
        guard let decompressor = DecompressorPool.shared.take() else {
            return (try? inflateStreaming(data, limit: max(size, 1)))?.count == size
        }
        defer { DecompressorPool.shared.give(decompressor) }
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 1)
        defer { scratch.deallocate() }
        switch data.withUnsafeBytes({ inflateMembers($0, into: scratch, with: decompressor) }) {
        case .inflated(let count): return count == size
        case .needsSpace: return false
        case .rejected: return (try? inflateStreaming(data, limit: max(size, 1)))?.count == size
        }
    }

    /// Inflates one zlib stream into exactly `output.count` bytes (an ELF section compressed
    /// with `ELFCOMPRESS_ZLIB`, whose header states its size). Input libdeflate rejects is
    /// inflated again by zlib for the exact reason, as in `inflate`.
    public static func inflate(_ input: UnsafeRawBufferPointer, exactlyInto output: UnsafeMutableRawBufferPointer) throws(CompressionError) {
        if let decompressor = DecompressorPool.shared.take() {
            defer { DecompressorPool.shared.give(decompressor) }
            var made = 0
            let rc = libdeflate_zlib_decompress(decompressor, input.baseAddress, input.count, output.baseAddress, output.count, &made)
            switch rc {
            case LIBDEFLATE_SUCCESS:
                guard made == output.count else { throw .sizeMismatch(declared: output.count, actual: made) }
                return
            case LIBDEFLATE_INSUFFICIENT_SPACE: throw .sizeMismatch(declared: output.count, actual: nil)
            default: break
            }
        }
        // One byte past the declared size tells "more than declared" from a stream that fits.
        let inflated: Data
        do { inflated = try inflateStreaming(Data(input), limit: output.count + 1) } catch .tooLarge {
            throw .sizeMismatch(declared: output.count, actual: nil)
        }
        guard inflated.count == output.count else { throw .sizeMismatch(declared: output.count, actual: inflated.count) }
        _ = inflated.copyBytes(to: output)
    }

    private enum WholeBufferOutcome {
        case inflated(Int)
        case needsSpace
        case rejected
    }

    /// Every member of `input` (gzip members, or zlib streams, as zlib's auto-detecting inflate
    /// accepts them) one after another into `out`, until only zero padding is left.
    private static func inflateMembers(
        _ input: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, with decompressor: OpaquePointer
    ) -> WholeBufferOutcome {
        guard let base = input.baseAddress, let outBase = out.baseAddress else { return .rejected }
        var consumed = 0
        var produced = 0
        repeat {
            var used = 0
            var made = 0
            let rest = UnsafeRawBufferPointer(rebasing: input[consumed...])
            let gzip = rest.count >= 2 && rest[0] == 0x1f && rest[1] == 0x8b
            // libdeflate skips a gzip header's own CRC-16 (FHCRC) without checking it; zlib
            // checks it, so such a member (rare) goes to zlib, which refuses a wrong one
            // (the `inflate` fuzz target found the difference).
            if gzip, rest.count >= 4, rest[3] & 0x02 != 0 { return .rejected }
            let decompress = gzip ? libdeflate_gzip_decompress_ex : libdeflate_zlib_decompress_ex
            let rc = decompress(decompressor, base + consumed, rest.count, outBase + produced, out.count - produced, &used, &made)
            switch rc {
            case LIBDEFLATE_SUCCESS: break
            case LIBDEFLATE_INSUFFICIENT_SPACE: return .needsSpace
            default: return .rejected
            }
            // A member that consumed nothing would loop forever; libdeflate never does this.
            guard used > 0 else { return .rejected }
            consumed += used
            produced += made
        } while !input[consumed...].allSatisfy { $0 == 0 }
        return .inflated(produced)
    }

    /// The first output buffer: the gzip trailer's size when it is plausible (a deflate stream
    /// inflates at most 1032-fold), else `limit` when that is small (stored data passes its
    /// exact size), else a guess that `inflate` grows.
    private static func initialCapacity(_ data: Data, limit: Int) -> Int {
        let ceiling = min(limit, data.count.multipliedReportingOverflow(by: 1032).partialValue + 64)
        if let trailer = statedSize(data) { return max(1, min(trailer, ceiling)) }
        return limit <= 1 << 20 ? max(1, limit) : max(1, min(ceiling, max(data.count * 8, 64 << 10)))
    }

    /// zlib's streaming inflate: the exact error for input libdeflate rejected, and the reference
    /// `inflate` is held to (`ZlibTests`, the `inflate` fuzz target).
    public static func inflateStreaming(_ data: Data, limit: Int) throws(CompressionError) -> Data {
        var stream = z_stream()
        // 15 + 32: largest window, and detect gzip or zlib headers automatically.
        guard inflateInit2_(&stream, 15 + 32, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw .corrupt("inflateInit2 failed")
        }
        defer { inflateEnd(&stream) }

        let chunk = 64 * 1024
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: chunk)
        let input = [UInt8](data)
        var consumed = 0
        var finished = false

        while true {
            let remaining = input.count - consumed
            let (rc, produced, used): (Int32, Int, Int) = input.withUnsafeBufferPointer { inBuf in
                buffer.withUnsafeMutableBufferPointer { outBuf in
                    stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress.map { $0 + consumed })
                    stream.avail_in = uInt(remaining)
                    stream.next_out = outBuf.baseAddress
                    stream.avail_out = uInt(chunk)
                    let rc = StacklineZlib.inflate(&stream, Z_NO_FLUSH)
                    return (rc, chunk - Int(stream.avail_out), remaining - Int(stream.avail_in))
                }
            }
            consumed += used
            if produced > 0 {
                guard output.count + produced <= limit else { throw .tooLarge(limit: limit) }
                output.append(contentsOf: buffer[0..<produced])
            }
            switch rc {
            case Z_STREAM_END:
                // gzip allows concatenated members; skip trailing zero padding some tools add.
                let rest = input[consumed...]
                if rest.allSatisfy({ $0 == 0 }) {
                    finished = true
                } else {
                    guard inflateReset(&stream) == Z_OK else { throw .corrupt("inflateReset failed") }
                    continue
                }
            case Z_OK:
                continue
            case Z_BUF_ERROR where used == 0 && produced == 0:
                // No progress possible: the input ran out before the end of the stream.
                throw .truncated
            case Z_BUF_ERROR:
                continue
            default:
                let message = stream.msg.map { String(cString: $0) } ?? "zlib error \(rc)"
                throw .corrupt(message)
            }
            if finished { break }
        }
        return output
    }
}

/// libdeflate compressors kept between calls: allocating one costs more than compressing a
/// report. Workers compress on one thread, the server on a few; a handful stay idle at most.
/// Sendable: its only field is the `HandlePool`, which locks.
private final class CompressorPool: @unchecked Sendable {
    static let shared = CompressorPool()
    /// Level 1. Level 6 (zlib's default, used before) resets larger match-finder tables for
    /// every buffer and cost a worker several times as much per symbolicated report for output
    /// only slightly smaller (scripts/bench-queue.sh, 30-frame crashes; figures in
    /// docs/performance.md). Any level inflates alike.
    static let level: Int32 = 1
    private let pool = HandlePool(make: { libdeflate_alloc_compressor(CompressorPool.level) }, free: libdeflate_free_compressor)

    func take() -> OpaquePointer? { pool.take() }
    func give(_ compressor: OpaquePointer) { pool.give(compressor) }
}

/// libdeflate decompressors kept between calls rather than allocated for each: the master
/// inflates every report it claims and checks every result it stores.
/// Sendable: its only field is the `HandlePool`, which locks.
private final class DecompressorPool: @unchecked Sendable {
    static let shared = DecompressorPool()
    private let pool = HandlePool(make: { libdeflate_alloc_decompressor() }, free: libdeflate_free_decompressor)

    func take() -> OpaquePointer? { pool.take() }
    func give(_ decompressor: OpaquePointer) { pool.give(decompressor) }
}

/// Up to eight idle libdeflate handles of one kind, behind a lock.
/// Sendable: `lock` guards `idle`; `make` and `free` are immutable, and a handle taken is used by one thread until given back.
private final class HandlePool: @unchecked Sendable {
    private let make: () -> OpaquePointer?
    private let free: (OpaquePointer) -> Void
    private let lock = NSLock()
    private var idle: [OpaquePointer] = []

    init(make: @escaping () -> OpaquePointer?, free: @escaping (OpaquePointer) -> Void) {
        self.make = make
        self.free = free
    }

    func take() -> OpaquePointer? {
        lock.lock()
        let handle = idle.popLast()
        lock.unlock()
        return handle ?? make()
    }

    func give(_ handle: OpaquePointer) {
        lock.lock()
        if idle.count < 8 {
            idle.append(handle)
            lock.unlock()
        } else {
            lock.unlock()
            free(handle)
        }
    }
}
