import Foundation
import ReportModel
import TestSupport
import Testing

/// Compares Stackline's symbolication of a real crash with the Swift runtime's own
/// (`SWIFT_BACKTRACE=…,symbolicate=full`) for the same program.
///
/// Needs the libdw engine (Symbolication, from main): against the placeholder Symbolicator
/// every frame is `missingDebugFile` and this test fails, by design.
@Suite(.serialized) struct SymbolicationOracleTests {
    /// One inline level as the runtime describes it.
    struct Level: Equatable, CustomStringConvertible {
        var symbol: String?
        var function: String
        var file: String?
        var line: Int?
        var column: Int?
        var description: String {
            "\(function) [\(symbol ?? "-")] at \(file ?? "?"):\(line ?? 0):\(column ?? 0)"
        }
    }

    /// The runtime's frames of the crashed thread, grouped per raw frame (inline levels first).
    func oracleLevels(_ data: Data) throws -> [(image: String?, levels: [Level])] {
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let thread = try #require((json["threads"] as? [[String: Any]])?.first { $0["crashed"] as? Bool == true })
        var groups: [(String?, [Level])] = []
        var pending: [Level] = []
        for frame in thread["frames"] as? [[String: Any]] ?? [] where frame["address"] != nil {
            let description = frame["description"] as? String ?? ""
            // "level3(_:_:) + 57" → "level3(_:_:)"
            let name = description.replacingOccurrences(of: #" \+ \d+$"#, with: "", options: .regularExpression)
            let location = frame["sourceLocation"] as? [String: Any]
            pending.append(Level(
                symbol: frame["symbol"] as? String, function: name, file: location?["file"] as? String,
                line: location?["line"] as? Int, column: location?["column"] as? Int))
            if frame["inlined"] as? Bool != true {
                groups.append((frame["image"] as? String, pending))
                pending = []
            }
        }
        return groups
    }

    @Test func matchesTheSwiftRuntimeSymbolication() throws {
        let h = try Harness()
        let binary = try CrashFixture.shared.binary()
        let buildID = try #require(try readelfBuildID(binary))
        // The store's .build-id layout, as `stackline symbols add` lays it out.
        let target = "\(h.symbolsPath)/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).debug"
        try FileManager.default.createDirectory(
            atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: binary, toPath: target)

        let raw = try CrashFixture.shared.report(symbolicate: "off", cached: false)
        let oracle = try oracleLevels(try CrashFixture.shared.report(symbolicate: "full", cached: false))
        let ids = try h.submit(try h.write([raw]))
        let master = try h.startMaster(["--workers", "2", "--once"])
        #expect(try master.waitForExit() == 0)
        let out = try h.stackline(["report", "\(ids[0])", "--json"])
        let report = try JSONDecoder().decode(SymbolicatedReport.self, from: Data(out.stdout.utf8))
        let crashed = try #require(report.threads.first { $0.crashed })

        let demoName = (binary as NSString).lastPathComponent
        var compared = 0
        for (index, group) in oracle.enumerated() where group.image == demoName {
            let ours = crashed.frames.filter { $0.index == index }
            let mine = ours.map {
                Level(symbol: $0.symbol, function: $0.function ?? "?", file: $0.file, line: $0.line, column: $0.column)
            }
            #expect(ours.allSatisfy { $0.status == .symbolicated }, "frame \(index): \(ours.map(\.status))")
            #expect(mine.map(\.symbol) == group.levels.map(\.symbol), "frame \(index) linkage names")
            #expect(mine.map(\.file) == group.levels.map(\.file), "frame \(index) files")
            #expect(mine.map(\.line) == group.levels.map(\.line), "frame \(index) lines")
            #expect(mine.map(\.column) == group.levels.map(\.column), "frame \(index) columns")
            // The runtime prints simplified demangled names ("lookUp(_:at:)"); accept a fuller
            // demangling ("Demo.lookUp(_:at:) -> Swift.Int") that contains it.
            for (a, b) in zip(mine, group.levels) {
                let simplified = b.function
                #expect(
                    a.function == simplified || a.function.contains(simplified)
                        || a.function.contains(simplified.prefix { $0 != "(" }),
                    "frame \(index): \(a.function) vs runtime \(simplified)")
            }
            compared += 1
        }
        #expect(compared >= 4, "the demo binary's frames (lookUp, total, process, main) were compared")
    }
}
