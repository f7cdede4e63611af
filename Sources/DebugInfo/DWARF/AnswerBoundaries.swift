/// `DebugFile.answerBoundaries()`'s addresses, ascending and unique. Kept as 32-bit offsets from
/// the lowest when they all lie within 4 GiB of it (every image seen so far), which halves what
/// a symcache build holds through its whole sweep (`make bench`, the symcache build's peak RSS).
public struct AnswerBoundaries: RandomAccessCollection, Sendable {
    private let base: UInt64
    private let narrow: [UInt32]
    private let wide: [UInt64]

    /// `sorted` ascending and unique; consumed.
    init(sorted: consuming [UInt64]) {
        guard let first = sorted.first, let last = sorted.last, last - first <= UInt64(UInt32.max) else {
            (base, narrow, wide) = (0, [], sorted)
            return
        }
        var offsets: [UInt32] = []
        offsets.reserveCapacity(sorted.count)
        for a in sorted { offsets.append(UInt32(truncatingIfNeeded: a &- first)) }
        (base, narrow, wide) = (first, offsets, [])
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { narrow.isEmpty ? wide.count : narrow.count }
    public subscript(i: Int) -> UInt64 { narrow.isEmpty ? wide[i] : base &+ UInt64(narrow[i]) }
}
