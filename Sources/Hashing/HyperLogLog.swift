import Crypto
import Foundation

/// A HyperLogLog sketch of distinct values (the users of a session counter row), with
/// precision 14: 16,384 registers, a relative standard error of 1.04/√16384 ≈ 0.008, so the
/// 0.02 release health promises is about 2.5 standard errors (HyperLogLogTests checks it
/// against exact counts); Redis's PFCOUNT uses the same 2^14 registers.
///
/// Two forms, as ClickHouse's `uniqCombined` does: **exact** while small, the set of the
/// values' 64-bit hashes (8 bytes each, at most 2,048: the count is exact but for 64-bit hash
/// collisions), then **dense** (one byte per register, 16 KiB). A day's counter row of a rare
/// device model holds its few users in a few dozen bytes and counts them exactly, and no row is
/// ever larger than the dense form, whatever the launches. A union is the union of the hash
/// sets while it stays small, else the register-wise maximum, so the union of sketches is
/// exactly the sketch of the union, in any order.
///
/// The dense estimate is Ertl's "improved raw estimator" (O. Ertl, "New cardinality estimation
/// algorithms for HyperLogLog sketches", arXiv:1702.01284, also Redis's since 5.0): it uses
/// the histogram of register values, needs no empirical bias tables, and has no bias bump
/// where plain HyperLogLog switches from linear counting.
public struct HyperLogLog: Sendable, Equatable {
    /// Index bits.
    public static let precision = 14
    public static let registerCount = 1 << precision
    /// Hash bits left after the index; a register holds 0 … q + 1.
    static let q = 64 - precision
    /// Past this many hashes the exact form is no smaller than the dense one.
    static let sparseLimit = registerCount / 8

    /// The hashes seen (exact form), or nil when dense.
    private var sparse: Set<UInt64>?
    /// One byte per register (dense form); empty while sparse.
    private var dense: [UInt8]

    public init() {
        sparse = []
        dense = []
    }

    /// The 64-bit hash a value is counted by: the first 8 bytes of its SHA-256 (BoringSSL's,
    /// already linked), uniform enough for the estimator's assumptions and the same on every
    /// machine, so sketches stored by one server merge with another's.
    public static func hash(_ value: String) -> UInt64 {
        var hash: UInt64 = 0
        for byte in Crypto.SHA256.hash(data: Data(value.utf8)).prefix(8) { hash = hash << 8 | UInt64(byte) }
        return hash
    }

    public mutating func insert(_ value: String) { insert(hash: Self.hash(value)) }

    /// Counts a hashed value.
    public mutating func insert(hash: UInt64) {
        if sparse != nil {
            sparse!.insert(hash)
            if sparse!.count > Self.sparseLimit { densify() }
        } else {
            Self.setRegister(&dense, hash)
        }
    }

    /// The top 14 bits pick the register, which keeps the largest "position of the first 1
    /// bit" of the remaining 50 seen there.
    private static func setRegister(_ registers: inout [UInt8], _ hash: UInt64) {
        let index = Int(hash >> UInt64(q))
        // The sentinel bit bounds the count of leading zeros at q, so the rank is 1 … q + 1.
        let rest = (hash << UInt64(precision)) | (1 << UInt64(precision - 1))
        let rank = UInt8(rest.leadingZeroBitCount + 1)
        if registers[index] < rank { registers[index] = rank }
    }

    private mutating func densify() {
        guard let hashes = sparse else { return }
        var registers = [UInt8](repeating: 0, count: Self.registerCount)
        for hash in hashes { Self.setRegister(&registers, hash) }
        dense = registers
        sparse = nil
    }

    /// The union.
    public mutating func merge(_ other: HyperLogLog) {
        if let hashes = other.sparse {
            for hash in hashes { insert(hash: hash) }
            return
        }
        densify()
        for i in 0..<Self.registerCount where dense[i] < other.dense[i] { dense[i] = other.dense[i] }
    }

    /// True while the sketch holds its values' hashes (and counts exactly).
    public var isSparse: Bool { sparse != nil }

    /// The estimated number of distinct values inserted (and merged), rounded.
    public var estimate: Int {
        if let hashes = sparse { return hashes.count }
        var histogram = [Int](repeating: 0, count: Self.q + 2)
        for rank in dense { histogram[Int(rank)] += 1 }
        let m = Double(Self.registerCount)
        if histogram[0] == Self.registerCount { return 0 }
        var z = m * Self.tau(1 - Double(histogram[Self.q + 1]) / m)
        for k in stride(from: Self.q, through: 1, by: -1) { z = 0.5 * (z + Double(histogram[k])) }
        z += m * Self.sigma(Double(histogram[0]) / m)
        let alphaInfinity = 1 / (2 * log(2.0))
        return Int((alphaInfinity * m * m / z).rounded())
    }

    /// σ(x) = x + Σ_{k≥1} x^(2^k) 2^(k-1), summed until the terms no longer change the sum;
    /// x < 1 here (some register is set).
    static func sigma(_ x: Double) -> Double {
        var x = x
        var y = 1.0
        var z = x
        while true {
            x *= x
            let previous = z
            z += x * y
            y += y
            if z == previous { return z }
        }
    }

    /// τ(x) = (1 − x − Σ_{k≥1} (1 − x^(2^-k))² 2^-k) / 3, the correction for registers that
    /// reached the top value.
    static func tau(_ x: Double) -> Double {
        if x == 0 || x == 1 { return 0 }
        var x = x
        var y = 1.0
        var z = 1 - x
        while true {
            x = x.squareRoot()
            let previous = z
            y *= 0.5
            z -= (1 - x) * (1 - x) * y
            if z == previous { return z / 3 }
        }
    }

    // MARK: Stored form

    /// Encoding tags, the first byte of the stored form.
    private static let sparseTag: UInt8 = 1
    private static let denseTag: UInt8 = 2

    /// The stored form: tag 1 then each hash as 8 bytes big-endian, ascending; or tag 2 then
    /// the 16,384 register bytes.
    public var encoded: Data {
        if let hashes = sparse {
            var out = Data(capacity: 1 + hashes.count * 8)
            out.append(Self.sparseTag)
            for hash in hashes.sorted() {
                for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: hash >> UInt64(shift))) }
            }
            return out
        }
        var out = Data(capacity: 1 + Self.registerCount)
        out.append(Self.denseTag)
        out.append(contentsOf: dense)
        return out
    }

    /// Reads a stored form; any byte that is not what `encoded` writes is refused.
    public init(encoded data: Data) throws(HyperLogLogError) {
        let bytes = [UInt8](data)
        guard let tag = bytes.first else { throw .malformed("empty") }
        let body = bytes.dropFirst()
        let maxRank = UInt8(Self.q + 1)
        switch tag {
        case Self.sparseTag:
            guard body.count % 8 == 0, body.count / 8 <= Self.sparseLimit else {
                throw .malformed("exact form of \(body.count) bytes")
            }
            var hashes = Set<UInt64>(minimumCapacity: body.count / 8)
            var i = body.startIndex
            while i < body.endIndex {
                var hash: UInt64 = 0
                for byte in body[i..<(i + 8)] { hash = hash << 8 | UInt64(byte) }
                guard hashes.insert(hash).inserted else { throw .malformed("a hash stored twice") }
                i += 8
            }
            sparse = hashes
            dense = []
        case Self.denseTag:
            guard body.count == Self.registerCount else { throw .malformed("dense form of \(body.count) bytes") }
            guard body.allSatisfy({ $0 <= maxRank }) else { throw .malformed("a dense register above \(maxRank)") }
            sparse = nil
            dense = Array(body)
        default:
            throw .malformed("unknown encoding \(tag)")
        }
    }
}

/// A stored sketch that is not one `HyperLogLog.encoded` wrote.
public enum HyperLogLogError: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed(String)

    public var description: String {
        switch self {
        case .malformed(let why): "stored user sketch is malformed: \(why)"
        }
    }
}
