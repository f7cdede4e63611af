/// The arithmetic of the spike rule, apart from the database so it can be checked alone.
public enum SpikeMath {
    /// The median of `counts`: the middle value, or the mean of the two middle values for an
    /// even number of them; 0 for none. Zero-hours must be in `counts`: a group seen in 3 of
    /// 168 hours has a median of 0.
    public static func median(_ counts: [Int]) -> Double {
        guard !counts.isEmpty else { return 0 }
        let sorted = counts.sorted()
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? Double(sorted[mid]) : Double(sorted[mid - 1] + sorted[mid]) / 2
    }

    /// The `buckets` counts before the bucket starting at `start` (oldest first), each
    /// `bucketMs` long, zero where `known` has none.
    public static func baseline(before start: Int64, buckets: Int, bucketMs: Int64, known: [Int64: Int]) -> [Int] {
        (1...max(1, buckets)).reversed().map { known[start - Int64($0) * bucketMs] ?? 0 }
    }

    /// Whether `count` reports in one bucket is a spike over `baseline`: at least `minCount`
    /// and more than `multiplier` × the baseline's median.
    public static func isSpike(count: Int, baseline: [Int], multiplier: Double, minCount: Int) -> Bool {
        count >= minCount && Double(count) > multiplier * median(baseline)
    }
}
