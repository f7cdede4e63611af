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
            return "inflated: \(a.count) bytes"
        case (.failure(let a), .failure):
            return "refused: \(a)"
        case (.success(let a), .failure(let b)):
            throw FuzzFailure("libdeflate inflated \(a.count) bytes where zlib refused: \(b)")
        case (.failure(let a), .success(let b)):
            throw FuzzFailure("libdeflate refused (\(a)) what zlib inflated to \(b.count) bytes")
        }
    }
}
