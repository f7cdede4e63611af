import Grouping
import ReportModel
import Testing

/// The lag key on profile trees of 200k nodes: trimming and the key search are single passes
/// (plus a bounded number of trim rounds), so these finish as fast as small trees do.
@Suite struct LagKeyScaleTests {
    static func node(_ depth: Int, cost: Double, address: UInt64) -> SymbolicatedProfileNode {
        let frame = SymbolicatedFrame(
            index: 0, address: Address(address), kind: .pc, image: "App", status: .symbolicated,
            function: "f\(address)", inApp: true)
        return SymbolicatedProfileNode(node: ProfileNode(depth: depth, count: 1, costTime: cost), frames: [frame])
    }

    /// Root … depth 9 cost 100 each; at depth 10 the key node A (cost 90, address 0xA) above a
    /// chain reaching depth `chainEnd`, whose nodes (cost 90, equal to their parent's) never
    /// qualify, and its sibling B (cost 10, below 20% of its parent's). `leaves` cheap nodes
    /// hang under A. By the rule (cost > parent × 1.1 / n and > parent × 0.2), A is the key:
    /// 90 > 100 × 1.1 / 2 and 90 > 20.
    static func tree(chainEnd: Int, leaves: Int) -> [SymbolicatedProfileNode] {
        var nodes = (0..<10).map { node($0, cost: 100, address: 0x100 + UInt64($0)) }
        nodes.append(node(10, cost: 90, address: 0xA))
        nodes += (0..<leaves).map { node(11, cost: 0.001, address: 0x20_0000 + UInt64($0)) }
        nodes += (11...chainEnd).map { node($0, cost: 90, address: 0x10_0000 + UInt64($0)) }
        nodes.append(node(10, cost: 10, address: 0xB))
        return nodes
    }

    @Test(arguments: [(200_000, 0), (50, 200_000)])
    func aHugeTreeStillYieldsItsKeyNode(chainEnd: Int, leaves: Int) throws {
        let tree = Self.tree(chainEnd: chainEnd, leaves: leaves)
        #expect(tree.count >= 200_000)
        let path = try #require(LagKeyMaker().keyPath(tree))
        #expect(path.map(\.node.depth) == Array((0...10).reversed()))
        #expect(path.first?.frames.first?.address == Address(0xA))
    }
}
