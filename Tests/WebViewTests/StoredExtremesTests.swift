import Foundation
import ReportModel
import Testing
import WebView

/// Issue 28, F2: a page must render whatever a stored result holds, even values intake no longer
/// accepts (a result stored before the rule, or written by an old worker): counts summing past
/// Int.max, negative counts, absurd depths, costs that are not numbers. Nothing traps, and what
/// is drawn stays inside the graph.
@Suite struct StoredExtremesTests {
    func node(_ depth: Int, _ count: Int, cost: Double = 1, name: String) -> SymbolicatedProfileNode {
        SymbolicatedProfileNode(
            node: ProfileNode(depth: depth, count: count, costTime: cost, address: Address(UInt64.max)),
            frames: [SymbolicatedFrame(index: 0, address: Address(UInt64.max), kind: .pc, image: "/app/Demo", status: .symbolicated, function: name)])
    }

    /// Drawn rectangles lie inside the graph's width, with finite coordinates.
    func expectInside(_ layout: FlameLayout, sourceLocation: SourceLocation = #_sourceLocation) {
        for rect in layout.rects {
            #expect(rect.x.isFinite && rect.width.isFinite, sourceLocation: sourceLocation)
            #expect(rect.x >= 0 && rect.x + rect.width <= layout.width * (1 + 1e-9), "\(rect)", sourceLocation: sourceLocation)
        }
    }

    /// F2's tree: roots whose counts sum past Int.max (the layout's sum trapped).
    @Test func rootsSummingPastIntMaxAreDrawnWithASaturatedTotal() {
        let profile = [node(0, Int.max, name: "a"), node(1, Int.max, name: "b"), node(0, Int.max, name: "c"), node(0, 5, name: "d")]
        let nodes = FlameGraph.nodes(profile: profile, keyFrames: [])
        let layout = FlameGraph.layout(nodes, width: 1000)
        #expect(layout.total == Int.max)
        #expect(layout.rects.count == 4)
        expectInside(layout)
        // The two big roots share the width nearly evenly; the 5-sample root is a sliver.
        let widths = layout.rects.map(\.width)
        #expect(abs(widths[0] - 500) < 1e-6 && abs(widths[2] - 500) < 1e-6 && widths[3] < 1e-6)
        let svg = FlameGraph.svg(nodes, layout)
        #expect(svg.contains("aria-label=\"flame graph, 9223372036854775807 samples\""))
        #expect(svg.contains("data-count=\"9223372036854775807\""))
    }

    /// The whole report page: a stored hang with extreme values, NaN and infinite costs
    /// (JSON cannot hold them, but a model from elsewhere can), negative counts, and a depth
    /// past anything drawable.
    @Test func theReportPageRendersExtremeStoredValues() {
        var profile = [node(0, Int.max, cost: .nan, name: "root"), node(0, Int.max, cost: .infinity, name: "other"),
                       node(1, -7, cost: -.infinity, name: "negative"), node(Int.max, Int.max, name: "far")]
        profile += (0..<300).map { node($0 + 1, Int.max, cost: 1e308, name: "deep\($0)") }
        let samples = [SymbolicatedSample(timestamp: String(repeating: "9", count: 40), frames: profile[0].frames)]
        let report = SymbolicatedReport(
            id: Int64.max, format: "sdk-lag", kind: .lag, status: .complete, missingBuildIds: [],
            images: [BinaryImage(name: "Demo", loadAddress: Address(UInt64.max), size: UInt64.max, vmAddress: Address(UInt64.max))],
            threads: [SymbolicatedThread(index: Int.min, crashed: true, frames: profile[0].frames)],
            lag: SymbolicatedLag(samples: samples, profile: profile))
        let page = ReportPage.render(ReportPageModel(
            id: Int64.max, report: report, groupFingerprint: "f", groupTitle: "t", keyFrames: ["Demo!root"], missing: [], serverURL: "http://127.0.0.1:1"))
        #expect(page.contains("data-k=\"flame\""))
        #expect(page.contains("data-total=\"9223372036854775807\""))
        // 304 nodes, levels 0…300; those from level 256 on are counted, not drawn.
        #expect(page.contains("nodes deeper than \(FlameGraph.maxLevels) levels are not drawn"))
        let nodes = FlameGraph.nodes(profile: profile, keyFrames: [])
        let layout = FlameGraph.layout(nodes)
        #expect(layout.rects.count + layout.omitted == profile.count)
        expectInside(layout)
    }

    /// Counts of a group's trend or versions, from queries: sums and bar widths stay finite.
    @Test func chartsTakeExtremeCounts() {
        let trend = Charts.trend([Int.max, Int.max, 0, 3])
        #expect(trend.contains("aria-label=\"9223372036854775807 reports in the last 4 days\""))
        #expect(!trend.contains("nan") && !trend.contains("inf"))
        let bars = Charts.bars([("1.0", Int.max), ("2.0", Int.min), ("3.0", 0)], highlight: "1.0")
        #expect(bars.contains("data-count=\"9223372036854775807\""))
        #expect(!bars.contains("nan") && !bars.contains("inf"))
    }
}
