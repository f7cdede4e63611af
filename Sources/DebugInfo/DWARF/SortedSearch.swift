/// The last index `i` in `0..<count` whose `key(i) <= address`, or -1: keys ascending (equal
/// keys allowed). From a `hint` at or below the answer it steps forward a few entries, as a
/// sweep upwards needs; otherwise, or when the steps do not reach it, it searches.
@inline(__always)
func lastIndex(atOrBelow address: UInt64, count: Int, hint: Int, key: (Int) -> UInt64) -> Int {
    var lo = 0
    if hint >= 0 && hint < count && key(hint) <= address {
        var i = hint
        var steps = 0
        while i + 1 < count && key(i + 1) <= address {
            i += 1
            steps += 1
            if steps == 8 { break }
        }
        if i + 1 == count || key(i + 1) > address { return i }
        lo = i + 1
    }
    var hi = count
    while lo < hi {
        let mid = (lo + hi) / 2
        if key(mid) <= address { lo = mid + 1 } else { hi = mid }
    }
    return lo - 1
}
