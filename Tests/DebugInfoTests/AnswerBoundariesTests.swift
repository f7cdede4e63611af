@testable import DebugInfo
import TestSupport
import Testing

/// The boundaries a symcache build sweeps are sorted by a radix sort and stored as 32-bit
/// offsets when they fit: both forms must give back exactly what the standard library's sort
/// and a set give for the same addresses.
@Suite struct AnswerBoundariesTests {
    @Test(arguments: [
        [UInt64](),
        [0x1000],
        [0x40_2000, 0x40_1000, 0x40_1004, 0x40_1000, 0x40_1000 + UInt64(UInt32.max)],
        // Past 4 GiB from the lowest: kept as they are.
        [0x2000, 0x1000 + UInt64(UInt32.max) + 1, 0x1000, 0x2000],
        [UInt64.max, 0, UInt64.max - 1, 0],
    ])
    func theAddressesComeBackSortedAndUnique(addresses: [UInt64]) {
        #expect(Array(AnswerBoundaries(unsorted: addresses)) == Array(Set(addresses)).sorted())
    }

    @Test func manyRandomAddressesSortAsTheStandardLibrarySortsThem() {
        var random = SeededGenerator(seed: 31)
        for span: UInt64 in [0xFF, 0xFFFF, 0x1_0000, 0xFFFF_FFFF] {
            let base = UInt64.random(in: 0...0xFFFF_0000_0000, using: &random)
            let addresses = (0..<50_000).map { _ in base + UInt64.random(in: 0...span, using: &random) }
            #expect(Array(AnswerBoundaries(unsorted: addresses)) == Array(Set(addresses)).sorted(), "span \(span)")
        }
    }
}
