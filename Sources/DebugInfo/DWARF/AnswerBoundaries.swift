/// `DebugFile.answerBoundaries()`'s addresses, ascending and unique. Kept as 32-bit offsets from
/// the lowest when they all lie within 4 GiB of it (every image seen so far), which halves what
/// a symcache build holds through its whole sweep (`make bench`, the symcache build's peak RSS).
public struct AnswerBoundaries: RandomAccessCollection, Sendable {
    private let base: UInt64
    private let narrow: [UInt32]
    private let wide: [UInt64]

    /// Sorts `addresses` (consumed) and drops repeats.
    init(unsorted addresses: consuming [UInt64]) {
        guard let low = addresses.min(), let high = addresses.max(), high - low <= UInt64(UInt32.max) else {
            var sorted = addresses
            sorted.sort()
            Self.dropRepeats(&sorted)
            (base, narrow, wide) = (0, [], sorted)
            return
        }
        var offsets: [UInt32] = []
        offsets.reserveCapacity(addresses.count)
        for a in addresses { offsets.append(UInt32(truncatingIfNeeded: a &- low)) }
        addresses = []
        Self.radixSort(&offsets)
        Self.dropRepeats(&offsets)
        (base, narrow, wide) = (low, offsets, [])
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { narrow.isEmpty ? wide.count : narrow.count }
    public subscript(i: Int) -> UInt64 { narrow.isEmpty ? wide[i] : base &+ UInt64(narrow[i]) }

    /// Unique in place: a second array was the largest transient of a symcache build.
    private static func dropRepeats<T: Equatable>(_ values: inout [T]) {
        var kept = 0
        for i in values.indices where kept == 0 || values[kept - 1] != values[i] {
            values[kept] = values[i]
            kept += 1
        }
        values.removeLast(values.count - kept)
    }

    /// Two counting passes of 16 bits, through buffer pointers: a large file has millions of
    /// boundaries, and the standard library's comparison sort was the largest part of
    /// gathering them (`make bench`, symcache build).
    static func radixSort(_ values: inout [UInt32]) {
        guard values.count > 1 else { return }
        var other = [UInt32](repeating: 0, count: values.count)
        var counts = [Int](repeating: 0, count: 1 << 16)
        for shift: UInt32 in [0, 16] {
            values.withUnsafeBufferPointer { from in
                other.withUnsafeMutableBufferPointer { to in
                    counts.withUnsafeMutableBufferPointer { count in
                        count.update(repeating: 0)
                        for v in from { count[Int((v &>> shift) & 0xFFFF)] &+= 1 }
                        var total = 0
                        for i in count.indices {
                            let c = count[i]
                            count[i] = total
                            total &+= c
                        }
                        for v in from {
                            let bucket = Int((v &>> shift) & 0xFFFF)
                            to[count[bucket]] = v
                            count[bucket] &+= 1
                        }
                    }
                }
            }
            swap(&values, &other)
        }
    }
}
