import Foundation
import ReportModel
import ReportRendering
import Testing

/// Issue 28, F2: the text, Apple and JSON renderings of a stored result take any value it
/// holds (a result stored before intake checked sums, or by an old worker) without trapping:
/// counts at Int.max and Int.min, depths far past the limit or negative, non-finite costs,
/// addresses and image extents at 2^64 − 1.
@Suite struct StoredExtremesRenderTests {
    static func report(cost: Double) -> SymbolicatedReport {
        let frame = SymbolicatedFrame(
            index: Int.max, address: Address(UInt64.max), kind: .pc, image: "Demo", imageOffset: Address(UInt64.max),
            status: .symbolicated, function: "spin", offset: UInt64.max, line: Int.max, column: Int.min)
        var unresolved = frame
        unresolved.status = .missingDebugFile
        unresolved.function = nil
        let nodes = [(0, Int.max), (0, Int.max), (Int.max, Int.min), (-3, 0), (1, Int.max)].map { depth, count in
            SymbolicatedProfileNode(node: ProfileNode(depth: depth, count: count, costTime: cost, address: Address(UInt64.max), methodId: Int.min), frames: [frame])
        }
        return SymbolicatedReport(
            id: Int64.max, format: "sdk-lag", kind: .lag, status: .partial, missingBuildIds: [],
            images: [BinaryImage(name: "Demo", loadAddress: Address(UInt64.max), size: UInt64.max, vmAddress: Address(UInt64.max))],
            threads: [SymbolicatedThread(index: Int.min, crashed: true, frames: [frame, unresolved])],
            lag: SymbolicatedLag(samples: [SymbolicatedSample(frames: [frame, unresolved])], profile: nodes))
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity, 1e308, -0.0])
    func textAndAppleRenderingsTakeAnyStoredValue(_ cost: Double) {
        let report = Self.report(cost: cost)
        let text = TextReportRenderer.render(report)
        #expect(text.contains("[\(Int.max)x, \(cost) ms]"))
        // A depth past the indentation limit is printed, not indented Int.max levels.
        #expect(text.contains("[depth \(Int.max)]"))
        let apple = AppleReportRenderer.render(report)
        #expect(apple.contains("count \(Int.min)"))
        #expect(apple.count < 100_000)
    }

    /// JSON holds no NaN or infinity: those are refused by name; the rest is written exactly.
    @Test func theJSONRenderingWritesExtremesExactlyOrRefusesNonFiniteCosts() throws {
        let json = try JSONReportRenderer.render(Self.report(cost: 1e308))
        #expect(json.contains("9223372036854775807") && json.contains("-9223372036854775808"))
        #expect(throws: (any Error).self) { try JSONReportRenderer.render(Self.report(cost: .nan)) }
        #expect(throws: SymbolicatedReportJSON.Failure.self) { try SymbolicatedReportJSON.encode(Self.report(cost: .infinity)) }
    }
}
