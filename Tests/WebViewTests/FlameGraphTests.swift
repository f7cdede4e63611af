import ReportModel
import Testing
import WebView

/// Flame-graph geometry: one rectangle per node, widths proportional to counts, children
/// inside their parents, parents found the SDK's way (nearest earlier smaller depth).
@Suite struct FlameGraphTests {
    func node(_ depth: Int, _ count: Int, _ name: String, inApp: Bool = false) -> SymbolicatedProfileNode {
        SymbolicatedProfileNode(
            node: ProfileNode(depth: depth, count: count, costTime: Double(count) * 50, address: Address(0x1000)),
            frames: [SymbolicatedFrame(index: 0, address: Address(0x1000), kind: .pc, image: "/app/lagdemo", status: .symbolicated,
                                       function: name, inApp: inApp)])
    }

    /// func1 → func2 → func3 → func4 → {func5, func6 ×2, func7, func8}, as the seed's hang.
    var seed: [SymbolicatedProfileNode] {
        [node(0, 8, "func1"), node(1, 8, "func2"), node(2, 8, "func3"), node(3, 8, "func4", inApp: true),
         node(4, 1, "func5"), node(4, 2, "func6"), node(4, 1, "func7"), node(4, 1, "func8")]
    }

    @Test func parentsComeFromDepthsAndLevelsFromTheTree() {
        let nodes = FlameGraph.nodes(profile: seed, keyFrames: ["lagdemo!func4"])
        #expect(nodes.map(\.parent) == [nil, 0, 1, 2, 3, 3, 3, 3])
        #expect(nodes.map(\.level) == [0, 1, 2, 3, 4, 4, 4, 4])
        #expect(nodes.map(\.isKey) == [false, false, false, true, false, false, false, false])
        #expect(nodes[3].inApp)
    }

    @Test func oneRectanglePerNodeWithWidthsProportionalToCounts() {
        let nodes = FlameGraph.nodes(profile: seed, keyFrames: [])
        let layout = FlameGraph.layout(nodes, width: 800, rowHeight: 20)
        #expect(layout.rects.count == nodes.count)
        #expect(layout.total == 8)
        for rect in layout.rects {
            #expect(abs(rect.width - 800 * Double(nodes[rect.node].count) / 8) < 1e-9)
            #expect(rect.y == Double(nodes[rect.node].level) * 20)
        }
        // Siblings side by side from the parent's left edge, in order.
        let leaves = layout.rects.filter { nodes[$0.node].level == 4 }
        #expect(leaves.map(\.x) == [0, 100, 300, 400])
        #expect(layout.height == 100)
    }

    @Test func childrenClaimingMoreThanTheirParentStayInsideTheGraph() {
        // A malformed tree: the children sum to 12 under a parent of 4.
        let nodes = FlameGraph.nodes(profile: [node(0, 4, "a"), node(1, 6, "b"), node(1, 6, "c")], keyFrames: [])
        let layout = FlameGraph.layout(nodes, width: 1200)
        #expect(layout.rects.allSatisfy { $0.x + $0.width <= 1200 + 1e-9 })
        // Still proportional: every width is count × the same scale.
        let scales = Set(layout.rects.map { $0.width / Double(nodes[$0.node].count) })
        #expect(scales.count == 1)
    }

    @Test func samplesMergeIntoATreeCountingSamplesPerPath() {
        func frame(_ i: Int, _ f: String) -> SymbolicatedFrame {
            SymbolicatedFrame(index: i, address: Address(UInt64(0x1000 + i)), kind: .pc, image: "lagdemo", status: .symbolicated, function: f)
        }
        // Innermost first, as a thread's frames.
        let samples = [
            SymbolicatedSample(frames: [frame(0, "c"), frame(1, "b"), frame(2, "a")]),
            SymbolicatedSample(frames: [frame(0, "d"), frame(1, "b"), frame(2, "a")]),
            SymbolicatedSample(frames: [frame(0, "b"), frame(1, "a")]),
        ]
        let nodes = FlameGraph.nodes(samples: samples, keyFrames: ["lagdemo!b"])
        #expect(nodes.map(\.label) == ["a", "b", "c", "d"])
        #expect(nodes.map(\.count) == [3, 3, 1, 1])
        #expect(nodes.map(\.parent) == [nil, 0, 1, 1])
        #expect(nodes.map(\.isKey) == [false, true, false, false])
    }

    @Test func absurdDepthsAreBoundedAndCounted() {
        let deep = (0..<(FlameGraph.maxLevels + 10)).map { node($0, 1, "f\($0)") }
        let layout = FlameGraph.layout(FlameGraph.nodes(profile: deep, keyFrames: []))
        #expect(layout.rects.count == FlameGraph.maxLevels)
        #expect(layout.omitted == 10)
        // A claimed depth of 2^32 is one level below its parent, not 2^32 rows.
        let odd = FlameGraph.nodes(profile: [node(0, 1, "a"), node(4_294_967_296, 1, "b")], keyFrames: [])
        #expect(odd.map(\.level) == [0, 1])
    }

    @Test func theSVGHasOneRectPerNodeWithEscapedLabels() {
        let nodes = FlameGraph.nodes(profile: [node(0, 2, "<script>x</script>"), node(1, 1, "\"><img onerror=alert(1)>")], keyFrames: [])
        let svg = FlameGraph.svg(nodes, FlameGraph.layout(nodes))
        #expect(svg.components(separatedBy: "<rect").count - 1 == 2)
        #expect(!svg.contains("<script>") && !svg.contains("<img"))
    }
}
