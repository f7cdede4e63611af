import Compression
import Foundation

/// Every upload and stored report is inflated by `Zlib.inflate` (libdeflate, whole buffer, a
/// size guessed from the gzip trailer and grown up to the limit); zlib's streaming inflate is
/// the reference. What one inflates the other must inflate to the same bytes, and what one
/// refuses the other refuses too.
enum InflateTarget {
    /// Small enough that a bomb costs little per run, large enough for real reports to fit.
    static let limit = 1 << 20

    static func agree(_ data: Data) throws(FuzzFailure) -> String {
        let fast = Result { () throws(CompressionError) in try Zlib.inflate(data, limit: limit) }
        let reference = Result { () throws(CompressionError) in try Zlib.inflateStreaming(data, limit: limit) }
        switch (fast, reference) {
        case (.success(let a), .success(let b)):
            guard a == b else { throw FuzzFailure("libdeflate inflated \(a.count) bytes, zlib \(b.count), and they differ") }
            try checkExactSize(data, inflatesTo: b.count)
            return "inflated: \(a.count) bytes"
        case (.failure(let a), .failure):
            // Refused whole, refused at any size (the master's check of a result).
            for size in [0, 1, data.count, limit] where Zlib.inflatesExactly(data, size: size) {
                throw FuzzFailure("inflatesExactly(size: \(size)) accepted what both inflaters refuse")
            }
            return "refused: \(a)"
        case (.success(let a), .failure(let b)):
            throw FuzzFailure("libdeflate inflated \(a.count) bytes where zlib refused: \(b)")
        case (.failure(let a), .success(let b)):
            throw FuzzFailure("libdeflate refused (\(a)) what zlib inflated to \(b.count) bytes")
        }
    }

    /// `Zlib.inflatesExactly`, the master's check of every result, answers yes at the size zlib
    /// inflates to and no at any other.
    private static func checkExactSize(_ data: Data, inflatesTo size: Int) throws(FuzzFailure) {
        guard Zlib.inflatesExactly(data, size: size) else {
            throw FuzzFailure("inflatesExactly refused the \(size) bytes zlib inflates this to")
        }
        for other in [size - 1, size + 1, 0] where other != size && other >= 0 && Zlib.inflatesExactly(data, size: other) {
            throw FuzzFailure("inflatesExactly(size: \(other)) accepted what inflates to \(size) bytes")
        }
    }
}
