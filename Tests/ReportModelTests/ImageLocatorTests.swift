import ReportModel
import TestSupport
import Testing

/// `ImageLocator` answers by binary search; a plain scan of every image with the documented
/// rule is the reference it must agree with, on random layouts with overlaps and unsized images.
@Suite struct ImageLocatorTests {
    /// The rule, written the obvious quadratic way.
    func scan(_ images: [BinaryImage], _ address: UInt64) -> Int? {
        let sized = images.indices.filter { (images[$0].size ?? 0) > 0 }
            .sorted { (images[$0].loadAddress.value, $0) < (images[$1].loadAddress.value, $1) }
        if let hit = sized.last(where: { images[$0].loadAddress.value <= address && address - images[$0].loadAddress.value < images[$0].size! }) {
            return hit
        }
        let unsized = images.indices.filter { (images[$0].size ?? 0) == 0 }
            .sorted { (images[$0].loadAddress.value, $0) < (images[$1].loadAddress.value, $1) }
        guard let below = unsized.last(where: { images[$0].loadAddress.value <= address }) else { return nil }
        let start = images[below].loadAddress.value
        if sized.contains(where: { images[$0].loadAddress.value > start && images[$0].loadAddress.value <= address }) { return nil }
        return below
    }

    @Test(arguments: 1...40)
    func agreesWithAScanOfEveryImage(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let images = (0..<Int(random.next() % 60 + 1)).map { i in
            let size = random.next() % 4 == 0 ? nil : random.next() % 0x3000
            return BinaryImage(name: "i\(i)", loadAddress: Address(random.next() % 0x40000), size: size)
        }
        let locator = ImageLocator(images: images)
        for _ in 0..<500 {
            let address = random.next() % 0x48000
            #expect(locator.image(containing: address) == scan(images, address), "address \(address)")
        }
    }
}
