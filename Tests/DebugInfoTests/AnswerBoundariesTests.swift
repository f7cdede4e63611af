@testable import DebugInfo
import Testing

/// The boundaries a symcache build sweeps are stored as 32-bit offsets when they fit: both
/// forms must give back exactly the addresses they were made from.
@Suite struct AnswerBoundariesTests {
    @Test(arguments: [
        [UInt64](),
        [0x1000],
        [0x40_1000, 0x40_1004, 0x40_2000, 0x40_1000 + UInt64(UInt32.max)],
        // Past 4 GiB from the lowest: kept as they are.
        [0x1000, 0x2000, 0x1000 + UInt64(UInt32.max) + 1],
        [0, UInt64.max - 1, UInt64.max],
    ])
    func theAddressesComeBackAsTheyWent(addresses: [UInt64]) {
        let boundaries = AnswerBoundaries(sorted: addresses)
        #expect(Array(boundaries) == addresses)
        #expect(boundaries.count == addresses.count)
        #expect(boundaries.last == addresses.last)
    }
}
