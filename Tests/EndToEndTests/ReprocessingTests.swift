import Foundation
import TestSupport
import Testing

/// Grouping and reprocessing through the real binaries: reports whose debug file is
/// missing are grouped by image offset and listed by `symbols missing`; adding the file
/// requeues them, and the master regroups them by function with exact counts.
@Suite struct ReprocessingTests {
    struct GroupRow: Decodable {
        var fingerprint: String
        var kind: String
        var title: String
        var count: Int
        var versions: [String: Int]
    }

    struct MissingRow: Decodable {
        var buildId: String
        var imageName: String?
        var reportCount: Int
    }

    func groups(_ h: Harness, _ extra: [String] = []) throws -> [GroupRow] {
        let out = try h.stackline(["groups", "--json"] + extra)
        #expect(out.status == 0, "\(out.stderr)")
        return try JSONDecoder().decode([GroupRow].self, from: Data(out.stdout.utf8))
    }

    func runMaster(_ h: Harness) throws {
        let master = try h.startMaster(["--workers", "2", "--once"])
        #expect(try master.waitForExit() == 0, "\(master.log.suffix(2000))")
    }

    @Test func missingDebugFileThenAddedRegroupsReportsWithExactCounts() throws {
        let h = try Harness()
        let demo = try CrashFixture.shared.binary()
        guard let demoID = try readelfBuildID(demo) else { throw TestSupportError("demo has no build-id") }
        // Three real crashes at one site (fresh runs: different load addresses), two at another.
        let index = try (0..<3).map { _ in try CrashFixture.shared.report(mode: "index", cached: false) }
        let segv = try (0..<2).map { _ in try CrashFixture.shared.report(mode: "segv", cached: false) }
        let ids = try h.submit(try h.write(index + segv))
        #expect(ids.count == 5)

        // 1. Processed without the debug file: grouped by image offset, and listed as missing.
        try runMaster(h)
        let before = try groups(h)
        #expect(before.map(\.count).reduce(0, +) == 5)
        #expect(before.map(\.count).sorted() == [2, 3], "same build, same sites: \(before)")
        #expect(before.allSatisfy { $0.title.contains("Demo+0x") }, "\(before.map(\.title))")
        let missingOut = try h.stackline(["symbols", "missing", "--symbols", h.symbolsPath, "--json"])
        #expect(missingOut.status == 0, "\(missingOut.stderr)")
        let missing = try JSONDecoder().decode([MissingRow].self, from: Data(missingOut.stdout.utf8))
        let demoRow = try #require(missing.first { $0.buildId == demoID }, "\(missing)")
        #expect(demoRow.reportCount == 5)
        #expect(demoRow.imageName == "Demo")

        // 2. The build machine uploads the debug file: the five reports are requeued.
        let add = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, demo])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(add.stdout.contains("requeued 5 reports"), "\(add.stdout)")
        // Adding it again requeues nothing new: those jobs are still queued.
        #expect(!(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, demo]).stdout.contains("requeued")))

        // 3. Reprocessed: regrouped by function, the offset groups are gone, counts exact.
        try runMaster(h)
        let after = try groups(h)
        #expect(after.map(\.count).reduce(0, +) == 5, "every report in exactly one group: \(after)")
        #expect(after.count == 2)
        let lookUp = try #require(after.first { $0.title.contains("lookUp(_:at:) — Demo.swift") }, "\(after.map(\.title))")
        let write = try #require(after.first { $0.title.contains("writeThroughNull() — Demo.swift") }, "\(after.map(\.title))")
        #expect(lookUp.count == 3 && write.count == 2)
        #expect(Set(after.map(\.fingerprint)).isDisjoint(with: before.map(\.fingerprint)))
        let stillMissing = try h.stackline(["symbols", "missing", "--symbols", h.symbolsPath, "--json"]).stdout
        #expect(!stillMissing.contains(demoID))

        // Each report has one symbolicated result, with the function names from the source.
        for id in ids {
            let report = try h.stackline(["report", String(id)])
            #expect(report.status == 0)
            #expect(report.stdout.contains("lookUp(_:at:)") || report.stdout.contains("writeThroughNull()"))
        }
        let group = try h.stackline(["group", String(lookUp.fingerprint.prefix(10))])
        #expect(group.status == 0, "\(group.stderr)")
        #expect(group.stdout.contains("Reports: 3"))
        #expect(group.stdout.contains("Demo!lookUp(_:at:)"))
        #expect(try groups(h, ["--kind", "lag"]).isEmpty)
        #expect(try groups(h, ["--since", "1h"]).map(\.count).reduce(0, +) == 5)
    }
}

/// Lag reports in the SDK's format, through `submit` and the real master: the same hang at
/// two load addresses is one lag group, kept apart from crash groups.
@Suite struct LagGroupingEndToEndTests {
    @Test func theSameHangAtTwoLoadAddressesIsOneLagGroup() throws {
        let h = try Harness()
        let p = try LagProgram.shared.get()
        #expect(try h.stackline(["symbols", "add", "--symbols", h.symbolsPath, p.binary]).status == 0)
        let loads: [UInt64] = [0x5555_0000_0000, 0x5600_1234_5000].map { $0 + UInt64.random(in: 0..<0x1000) << 12 }
        let crash = try CrashFixture.shared.report()
        let ids = try h.submit(try h.write([p.sdkLagReport(load: loads[0], version: "1.0"), p.sdkLagReport(load: loads[1], version: "1.1"), crash]))
        #expect(ids.count == 3)
        let master = try h.startMaster(["--workers", "2", "--once"])
        #expect(try master.waitForExit() == 0, "\(master.log.suffix(2000))")

        let out = try h.stackline(["groups", "--kind", "lag", "--json"])
        let lag = try JSONDecoder().decode([ReprocessingTests.GroupRow].self, from: Data(out.stdout.utf8))
        #expect(lag.count == 1, "\(out.stdout)")
        #expect(lag.first?.kind == "lag")
        #expect(lag.first?.count == 2)
        #expect(lag.first?.versions == ["1.0": 1, "1.1": 1])
        #expect(lag.first?.title.hasPrefix("Hang in func4 — lag.c") == true, "\(lag.first?.title ?? "")")
        let crashes = try JSONDecoder().decode(
            [ReprocessingTests.GroupRow].self, from: Data(try h.stackline(["groups", "--kind", "crash", "--json"]).stdout.utf8))
        #expect(crashes.map(\.count) == [1])
        #expect(try h.stackline(["groups", "--version", "1.1", "--json"]).stdout.contains("\"count\" : 1"))
        let detail = try h.stackline(["group", lag.first?.fingerprint ?? "-"])
        #expect(detail.stdout.contains("lagdemo!func4"), "\(detail.stdout)")
    }
}
