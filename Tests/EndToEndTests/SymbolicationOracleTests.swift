import Foundation
import ReportModel
import TestSupport
import Testing

/// Compares Stackline's symbolication of a real crash with the Swift runtime's own
/// (`SWIFT_BACKTRACE=…,symbolicate=full`) for the same program: every frame whose image is in
/// the store, the program's (DWARF) and the Swift runtime libraries' (symbol table only).
@Suite(.serialized) struct SymbolicationOracleTests {
    /// One inline level as the runtime describes it.
    struct Level: Equatable, CustomStringConvertible {
        var symbol: String?
        var function: String
        var offset: UInt64?
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
                symbol: frame["symbol"] as? String, function: name,
                offset: (frame["offset"] as? Int).map { UInt64($0) }, file: location?["file"] as? String,
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
        // The program and the Swift runtime libraries it loaded, as a user would add them.
        let runtime = try CrashFixture.shared.report(symbolicate: "full", cached: false)
        let images = try #require(
            (try JSONSerialization.jsonObject(with: runtime) as? [String: Any])?["images"] as? [[String: Any]])
        let paths = images.compactMap { $0["path"] as? String }.filter { FileManager.default.fileExists(atPath: $0) }
        let added = try h.stackline(["symbols", "add", "--symbols", h.symbolsPath] + paths)
        #expect(added.status == 0, "symbols add: \(added.stderr)")

        let raw = try CrashFixture.shared.report(symbolicate: "off", cached: false)
        let oracle = try oracleLevels(runtime)
        let stored = Set(paths.map { ($0 as NSString).lastPathComponent })
        let symcaches = try storeFiles(h.symbolsPath, ending: ".symcache")
        #expect(symcaches.count == (try storeFiles(h.symbolsPath, ending: ".json")).count, "symbols add wrote a symcache per entry: \(symcaches)")
        let ids = try h.submit(try h.write([raw]))
        let master = try h.startMaster(["--workers", "2", "--once"])
        #expect(try master.waitForExit() == 0)
        try compare(try h.stackline(["report", "\(ids[0])", "--json"]).stdout, oracle, stored: stored, binary: binary)
        #expect(!master.log.contains("symcache"), "the symcaches were not used: \(master.log)")

        // The same report again, with every symcache damaged: the workers answer from the
        // debug files, say so, and write the symcaches back.
        let damaged = try Harness()
        try FileManager.default.removeItem(atPath: damaged.symbolsPath)
        try FileManager.default.copyItem(atPath: h.symbolsPath, toPath: damaged.symbolsPath)
        var damagedBytes: [String: Data] = [:]
        for relative in symcaches {
            let path = damaged.symbolsPath + "/" + relative
            var bytes = try #require(FileManager.default.contents(atPath: path))
            bytes[bytes.count / 2] ^= 0x40
            try bytes.write(to: URL(fileURLWithPath: path))
            damagedBytes[relative] = bytes
        }
        let again = try damaged.submit(try damaged.write([raw]))
        let second = try damaged.startMaster(["--workers", "2", "--once"])
        #expect(try second.waitForExit() == 0)
        try compare(try damaged.stackline(["report", "\(again[0])", "--json"]).stdout, oracle, stored: stored, binary: binary)
        // Only the images the report's frames fall in were needed, so only their symcaches were
        // found damaged and rebuilt: the program's and the runtime's at least.
        var rebuilt = 0
        for relative in symcaches {
            let parts = relative.split(separator: "/")
            let id = parts[1] + parts[2].dropLast(".symcache".count)
            guard second.log.contains("symcache for build-id \(id) not used (") else { continue }
            rebuilt += 1
            // Rebuilt: a new process maps it without a word (its header names the copied debug
            // file, so its bytes differ from the first store's).
            let looked = try damaged.stackline(["lookup", "--symbols", damaged.symbolsPath, "--build-id", String(id), "0x0"])
            #expect(looked.status == 0 && looked.stderr.isEmpty, "\(relative) not rebuilt: \(looked.stderr)")
            #expect(FileManager.default.contents(atPath: damaged.symbolsPath + "/" + relative) != damagedBytes[relative])
        }
        #expect(rebuilt >= 2, "the workers warned about \(rebuilt) damaged symcaches: \(second.log)")
    }

    /// The files below `store`'s `.build-id` whose names end in `suffix`, relative to `store`.
    func storeFiles(_ store: String, ending suffix: String) throws -> [String] {
        let root = store + "/.build-id"
        return try FileManager.default.contentsOfDirectory(atPath: root).flatMap { prefix in
            try FileManager.default.contentsOfDirectory(atPath: root + "/" + prefix).filter { $0.hasSuffix(suffix) }
                .map { ".build-id/\(prefix)/\($0)" }
        }.sorted()
    }

    /// Stackline's report (`report --json`) against the runtime's own symbolication, frame by frame.
    func compare(_ json: String, _ oracle: [(image: String?, levels: [Level])], stored: Set<String>, binary: String) throws {
        let report = try JSONDecoder().decode(SymbolicatedReport.self, from: Data(json.utf8))
        let crashed = try #require(report.threads.first { $0.crashed })
        var compared: [String: Int] = [:]
        for (index, group) in oracle.enumerated() {
            guard let image = group.image, stored.contains(image) else { continue }
            let ours = crashed.frames.filter { $0.index == index }
            let mine = ours.map {
                Level(symbol: $0.symbol, function: $0.function ?? "?", offset: $0.offset, file: $0.file, line: $0.line, column: $0.column)
            }
            #expect(ours.allSatisfy { $0.status == .symbolicated || $0.status == .noLineInfo }, "frame \(index): \(ours.map(\.status))")
            #expect(ours.first?.image == image, "frame \(index) image")
            #expect(mine.map(\.symbol) == group.levels.map(\.symbol), "frame \(index) linkage names")
            #expect(mine.map(\.file) == group.levels.map(\.file), "frame \(index) files")
            #expect(mine.map(\.line) == group.levels.map(\.line), "frame \(index) lines")
            #expect(mine.map(\.column) == group.levels.map(\.column), "frame \(index) columns")
            #expect(mine.last?.offset == group.levels.last?.offset, "frame \(index) offset into the function")
            // Reports demangle with the backtracer's own demangler, so names match exactly.
            #expect(mine.map(\.function) == group.levels.map(\.function), "frame \(index) names")
            compared[image, default: 0] += 1
        }
        let demoName = (binary as NSString).lastPathComponent
        #expect(compared[demoName, default: 0] >= 4, "the demo's frames (lookUp, total, process, main) were compared: \(compared)")
        #expect(compared["libswiftCore.so", default: 0] >= 1, "runtime frames resolved through the symbol table: \(compared)")
    }
}
