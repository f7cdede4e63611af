/// Half-open address intervals with a payload, searchable by address.
///
/// Intervals may overlap (discarded sections, nested scopes); a query returns the containing
/// interval with the greatest start, which for scopes is the most specific one.
struct IntervalIndex {
    private var starts: [UInt64] = []
    private var ends: [UInt64] = []
    private var values: [Int32] = []
    /// `maxEnd[i]` is the largest end among intervals `0...i`: lets the backward scan stop early.
    private var maxEnd: [UInt64] = []

    init(_ intervals: [(start: UInt64, end: UInt64, value: Int32)]) {
        let sorted = intervals.filter { $0.start < $0.end }.sorted { ($0.start, $0.end) < ($1.start, $1.end) }
        starts = sorted.map(\.start)
        ends = sorted.map(\.end)
        values = sorted.map(\.value)
        var running: UInt64 = 0
        maxEnd = ends.map { running = max(running, $0); return running }
    }

    var isEmpty: Bool { starts.isEmpty }

    /// Every interval's start and end: `find`'s answer changes only at these addresses.
    func appendBoundaries(to out: inout [UInt64]) {
        out += starts
        out += ends
    }

    func find(_ address: UInt64) -> Int32? {
        var hint = -1
        return find(address, hint: &hint)
    }

    /// `find(_:)`, first trying the interval found last (`hint`, -1 for none): it is the answer
    /// again when it still contains the address and no later interval starts at or below it,
    /// which is how a sweep upwards meets most addresses.
    func find(_ address: UInt64, hint: inout Int) -> Int32? {
        if hint >= 0 && hint < starts.count && starts[hint] <= address && address < ends[hint]
            && (hint + 1 == starts.count || starts[hint + 1] > address) {
            return values[hint]
        }
        var lo = 0
        var hi = starts.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if starts[mid] <= address { lo = mid + 1 } else { hi = mid }
        }
        var i = lo - 1
        while i >= 0 && maxEnd[i] > address {
            if ends[i] > address {
                hint = i
                return values[i]
            }
            i -= 1
        }
        return nil
    }
}
