/// Finds the image an absolute address belongs to, in logarithmic time: a report may list
/// thousands of images and hold hundreds of thousands of frames (ReportLimits), so a scan of
/// every image per frame would be quadratic.
public struct ImageLocator: Sendable {
    /// Images with a known extent, sorted by load address, with the largest end among each
    /// entry and those before it (so a search can stop once nothing earlier can reach).
    private let sized: [(start: UInt64, end: UInt64, index: Int)]
    private let reach: [UInt64]
    /// Images with no size: an address belongs to the nearest one below it.
    private let unsized: [(start: UInt64, index: Int)]

    public init(images: [BinaryImage]) {
        var sized: [(start: UInt64, end: UInt64, index: Int)] = []
        var unsized: [(start: UInt64, index: Int)] = []
        for (i, image) in images.enumerated() {
            if let size = image.size, size > 0 {
                sized.append((image.loadAddress.value, image.loadAddress.value &+ size, i))
            } else {
                unsized.append((image.loadAddress.value, i))
            }
        }
        // Stable order for equal starts, so the later-listed image wins as before.
        self.sized = sized.enumerated().sorted { ($0.element.start, $0.offset) < ($1.element.start, $1.offset) }.map(\.element)
        self.unsized = unsized.enumerated().sorted { ($0.element.start, $0.offset) < ($1.element.start, $1.offset) }.map(\.element)
        var reach: [UInt64] = []
        reach.reserveCapacity(self.sized.count)
        for entry in self.sized { reach.append(max(reach.last ?? 0, entry.end)) }
        self.reach = reach
    }

    /// The index (into the images given) of the image holding `address`: among sized images
    /// the one starting last at or below it; else the nearest unsized image below it, when no
    /// sized image starts between the two.
    public func image(containing address: UInt64) -> Int? {
        var candidate = Self.countAtOrBelow(address, in: sized.lazy.map(\.start)) - 1
        while candidate >= 0, reach[candidate] > address {
            if address < sized[candidate].end { return sized[candidate].index }
            candidate -= 1
        }
        let below = Self.countAtOrBelow(address, in: unsized.lazy.map(\.start)) - 1
        guard below >= 0 else { return nil }
        let start = unsized[below].start
        // A sized image starting in (start, address] is closer than the unsized one.
        let sizedUpToAddress = Self.countAtOrBelow(address, in: sized.lazy.map(\.start))
        let sizedUpToStart = Self.countAtOrBelow(start, in: sized.lazy.map(\.start))
        return sizedUpToAddress > sizedUpToStart ? nil : unsized[below].index
    }

    /// How many of the sorted `starts` are at or below `address`.
    private static func countAtOrBelow<C: RandomAccessCollection>(_ address: UInt64, in starts: C) -> Int
    where C.Element == UInt64, C.Index == Int {
        var low = starts.startIndex
        var high = starts.endIndex
        while low < high {
            let middle = (low + high) / 2
            if starts[middle] <= address { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
