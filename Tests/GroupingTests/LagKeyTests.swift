import Foundation
import ReportModel
import SymbolStore
import Symbolication
import Testing
import TestSupport

@testable import Grouping

/// Lag keys (seeds/002 section 一.6) on a real program: `func1`…`func8` compiled with
/// DWARF, addresses taken from `nm`, reports symbolicated through the real store.
@Suite struct LagKeyTests {
    typealias Program = LagProgram

    static let program = LagProgram.shared

    /// A realistic PIE load address: page aligned, in the usual mmap range.
    static let load = 0x5555_0000_0000 + UInt64.random(in: 0..<0x10_0000) << 12

    static func image(_ p: Program) -> BinaryImage {
        BinaryImage(name: "lagdemo", path: p.binary, id: try? BuildID(p.buildID), loadAddress: Address(load))
    }

    static func symbolicate(_ lag: LagData, _ p: Program) throws -> SymbolicatedReport {
        let store = SymbolStoreDirectory(root: try makeTemporaryDirectory(prefix: "lag-store"))
        _ = try store.add(path: p.binary)
        var report = Symbolicator(store: store).symbolicate(
            RawReport(format: "test", kind: .lag, images: [image(p)], lag: lag))
        InAppClassifier(rules: .standard).mark(&report)
        return report
    }

    /// The seed's example: the (top address, depth) pair of `func1 - func2 - func3 - func4`
    /// occurs three times, more than any other.
    @Test func theSeedsEightSamplesYieldFunc1ToFunc4() throws {
        let p = try Self.program.get()
        let samples = p.seedSamples(load: Self.load).map { addresses in
            LagSample(frames: addresses.enumerated().map { i, a in RawFrame(address: Address(a), kind: i == 0 ? .pc : .returnAddress) })
        }
        #expect(samples.count == 8)
        let report = try Self.symbolicate(LagData(samples: samples), p)
        let maker = LagKeyMaker()
        let stack = try #require(maker.lagStack(of: report))
        #expect(stack.source == .samples)
        #expect(stack.description == "func1 - func2 - func3 - func4")
        let key = maker.key(for: report)
        #expect(key.kind == .lag)
        #expect(key.frames == ["lagdemo!func4", "lagdemo!func3", "lagdemo!func2", "lagdemo!func1"])
        #expect(key.title.hasPrefix("Hang in func4 — lag.c"), "\(key.title)")
    }

    /// A thread-profile tree where each rule decides something:
    ///
    ///     depth 0  func1 1000
    ///     depth 1    func2 900 ✓ (> 1000×1.1/2 = 550, > 200)      func3 100 ✗
    ///     depth 2      func4 400 ✓ (> 900×1.1/3 = 330, > 180)     func5 300 ✗ (1.1/n)   func6 200 ✗
    ///     depth 3        func8 350 ✓ (under func4: > 400×1.1/2 = 220, > 80)   func7 100 (under func5) ✗
    ///     depth 4          func5 150 under func8: > 70 (20%) but not > 350×1.1/2 = 192.5 → fails 1.1/n
    ///                      func6 10 under func7 ✗
    ///     depth 5            func7 25 under depth-4 func5: > 150×1.1/8 = 20.6 but not > 30 (20%) → fails 20%
    ///                        seven func3 nodes of 1 under depth-4 func6 ✗
    ///
    /// The deepest qualifying node is func8: dropping the 1.1/n rule would pick depth 4, dropping
    /// the 20% rule depth 5.
    @Test func profileKeyFollowsTheElevenTenthsOverNAndTwentyPercentRules() throws {
        let p = try Self.program.get()
        func node(_ depth: Int, _ name: String, _ cost: Double) -> ProfileNode {
            ProfileNode(depth: depth, count: Int(cost / 50) + 1, costTime: cost, address: Address(Self.load + p.functions[name, default: 0]))
        }
        var nodes = [
            node(0, "func1", 1000),
            node(1, "func2", 900),
            node(2, "func4", 400),
            node(3, "func8", 350),
            node(4, "func5", 150),
            node(5, "func7", 25),
            node(2, "func5", 300),
            node(3, "func7", 100),
            node(4, "func6", 10),
        ]
        nodes += (0..<7).map { _ in node(5, "func3", 1) }
        nodes += [node(2, "func6", 200), node(1, "func3", 100)]
        let report = try Self.symbolicate(LagData(profile: nodes), p)
        let maker = LagKeyMaker()
        let stack = try #require(maker.lagStack(of: report))
        #expect(stack.source == .profile)
        #expect(stack.description == "func1 - func2 - func4 - func8")
        #expect(maker.key(for: report).frames.first == "lagdemo!func8")
    }

    /// Oversized trees are trimmed the SDK's way: 5 ms, then 10 ms, … until they fit.
    @Test func oversizedProfilesAreTrimmedInFiveMillisecondSteps() throws {
        let p = try Self.program.get()
        var rules = GroupingRules.standard
        rules.lag.maxProfileNodes = 6
        func node(_ depth: Int, _ cost: Double) -> SymbolicatedProfileNode {
            SymbolicatedProfileNode(node: ProfileNode(depth: depth, count: 1, costTime: cost, address: Address(p.functions["func1", default: 0])), frames: [])
        }
        let tree = [node(0, 100), node(1, 60), node(2, 4), node(2, 9), node(2, 12), node(1, 30), node(2, 5), node(3, 3), node(2, 20)]
        let trimmed = LagKeyMaker(rules: rules).trim(tree).map(\.node.costTime)
        // Round 1 (≤ 5 ms) drops 4, 5 and 5's child 3: six remain, which fits.
        #expect(trimmed == [100, 60, 9, 12, 30, 20])
        rules.lag.maxProfileNodes = 4
        // Round 2 (≤ 10 ms) drops 9 as well; round 3 (≤ 15 ms) drops 12.
        #expect(LagKeyMaker(rules: rules).trim(tree).map(\.node.costTime) == [100, 60, 30, 20])
        rules.lag.maxProfileDepth = 2
        #expect(LagKeyMaker(rules: rules).trim(tree).map(\.node.costTime) == [100, 60, 30])
    }
}
