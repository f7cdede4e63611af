import Foundation
import Hashing
import TestSupport
import Testing

/// The user sketch against exact counts (a `Set` of the same generated values).
@Suite struct HyperLogLogTests {
    /// `count` random user ids drawn from a space about as large, so some repeat, as launches of
    /// one user do; the exact answer is the set of what was drawn.
    func values(_ count: Int, seed: UInt64) -> [String] {
        var generator = SeededGenerator(seed: seed)
        let space = UInt64(count) + UInt64(count) / 4
        return (0..<count).map { _ in "user-\(UInt64.random(in: 0..<space, using: &generator))" }
    }

    @Test(arguments: [10_000, 100_000, 1_000_000])
    func estimatesDistinctValuesWithinTwoPercent(count: Int) {
        let drawn = values(count, seed: UInt64(count))
        let exact = Set(drawn).count
        var sketch = HyperLogLog()
        for value in drawn { sketch.insert(value) }
        let error = abs(Double(sketch.estimate - exact)) / Double(exact)
        #expect(error <= 0.02, "estimate \(sketch.estimate), exact \(exact), error \(error)")
        #expect(!sketch.isSparse)
        // Values seen again change nothing.
        let before = sketch
        for value in drawn.prefix(1000) { sketch.insert(value) }
        #expect(sketch == before)
    }

    /// Where release health usually is (tens to hundreds of users per version and day), the
    /// sketch holds the hashes themselves and counts exactly, up to 2,048 values; past that it
    /// is dense and within 2%.
    @Test func smallCountsAreExact() {
        for n in [0, 1, 2, 3, 10, 37, 100, 1000, 2048, 2049, 4000] {
            var sketch = HyperLogLog()
            for i in 0..<n { sketch.insert("u:small-\(i)") }
            for i in 0..<n / 2 { sketch.insert("u:small-\(i)") }
            if n <= 2048 {
                #expect(sketch.estimate == n)
                #expect(sketch.isSparse)
            } else {
                #expect(abs(Double(sketch.estimate - n)) <= Double(n) * 0.02, "n = \(n): estimate \(sketch.estimate)")
                #expect(!sketch.isSparse)
            }
        }
    }

    /// The union of sketches is the sketch of the union: same registers, whatever the split and
    /// whatever form (sparse or dense) each side is in.
    @Test func mergingIsTheSketchOfTheUnion() throws {
        let all = (0..<50_000).map { "u:\($0)" }
        for (a, b) in [(0..<30_000, 20_000..<50_000), (0..<49_900, 49_800..<50_000), (0..<100, 100..<50_000), (0..<1000, 500..<2000), (0..<1500, 1000..<2500)] {
            var left = HyperLogLog()
            var right = HyperLogLog()
            var whole = HyperLogLog()
            for i in a { left.insert(all[i]) }
            for i in b { right.insert(all[i]) }
            for i in Set(a).union(b) { whole.insert(all[i]) }
            var merged = left
            merged.merge(right)
            var mergedOtherWay = right
            mergedOtherWay.merge(left)
            #expect(merged == whole)
            #expect(mergedOtherWay == whole)
            #expect(try HyperLogLog(encoded: merged.encoded).estimate == whole.estimate)
        }
    }

    @Test func storedFormRoundTripsAndRefusesWhatItDidNotWrite() throws {
        var small = HyperLogLog()
        for i in 0..<20 { small.insert("d:\(i)") }
        #expect(small.isSparse)
        #expect(small.encoded.count == 1 + 20 * 8)
        #expect(try HyperLogLog(encoded: small.encoded) == small)
        var large = small
        for i in 0..<20_000 { large.insert("d:\(i)") }
        #expect(!large.isSparse)
        #expect(large.encoded.count == 1 + HyperLogLog.registerCount)
        #expect(try HyperLogLog(encoded: large.encoded) == large)
        #expect(try HyperLogLog(encoded: HyperLogLog().encoded).estimate == 0)

        for bad in [Data(), Data([3]), Data([1, 0, 1]), Data([1] + [UInt8](repeating: 7, count: 16)), Data([1] + [UInt8](repeating: 0, count: 9)),
                    Data([1] + [UInt8](repeating: 9, count: 8 * 2049)),
                    Data([2] + [UInt8](repeating: 0, count: 100)), Data([2] + [UInt8](repeating: 60, count: HyperLogLog.registerCount))]
        {
            #expect(throws: HyperLogLogError.self, "\(Array(bad.prefix(8)))") { try HyperLogLog(encoded: bad) }
        }
    }
}
