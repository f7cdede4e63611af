import Foundation
import ReportModel
import Testing

@testable import Grouping

/// Issue 28: the lag key is computed again when a stored report is regrouped, so it takes any
/// stored value without trapping: counts at the bounds of Int, depths past the limit, costs
/// that are not numbers. Where the costs are ordinary, the key node is the one the rule names.
@Suite struct StoredExtremesGroupingTests {
    static func node(_ depth: Int, _ count: Int, _ cost: Double, _ name: String) -> SymbolicatedProfileNode {
        SymbolicatedProfileNode(
            node: ProfileNode(depth: depth, count: count, costTime: cost, address: Address(UInt64.max)),
            frames: [SymbolicatedFrame(index: 0, address: Address(UInt64.max), kind: .pc, image: "Demo", status: .symbolicated, function: name, inApp: true)])
    }

    static func report(_ profile: [SymbolicatedProfileNode]) -> SymbolicatedReport {
        SymbolicatedReport(format: "sdk-lag", kind: .lag, status: .complete, missingBuildIds: [], threads: [], lag: SymbolicatedLag(profile: profile))
    }

    @Test(arguments: [Double.nan, .infinity, 1e308, -1e308])
    func extremeCostsAndCountsGroupWithoutTrapping(_ cost: Double) {
        let profile = [Self.node(0, Int.max, cost, "a"), Self.node(0, Int.max, cost, "b"), Self.node(Int.max, Int.min, cost, "c"),
                       Self.node(-1, 0, cost, "d")]
        let key = LagKeyMaker().key(for: Self.report(profile))
        #expect(key.kind == .lag)
        #expect(!key.fingerprint.isEmpty)
    }

    /// Finite costs near the top of Double: the root's cost sum is infinite, yet the in-app child
    /// that costs most of its parent is still the key.
    @Test func hugeFiniteCostsStillPickTheDominantChild() {
        let profile = [Self.node(0, 1, 1e308, "root"), Self.node(1, 1, 9e307, "hot"), Self.node(1, 1, 1e300, "cold"),
                       Self.node(0, 1, 1e308, "other")]
        let path = LagKeyMaker().keyPath(profile)
        #expect(path?.first?.frames.first?.function == "hot")
    }
}
