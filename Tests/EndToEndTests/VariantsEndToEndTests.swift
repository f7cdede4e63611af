import Foundation
import TestSupport
import Testing

/// Issue 12's real-world variants through the real `stackline submit --wait` and a real master:
/// each variant of a real sample lands in the group of the plain sample (whose own correctness
/// the format tests show against independent counts), or is split or refused as documented.
@Suite(.serialized) struct VariantsEndToEndTests {
    static let wild = TestPaths.packageRoot + "/Tests/Fixtures/wild"

    static func sample(_ relative: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: wild + "/" + relative)) }

    /// `submit --wait --json` of the files: every entry as printed.
    func submit(_ h: Harness, _ files: [(String, Data)]) throws -> (status: Int32, entries: [[String: Any]], stderr: String) {
        let folder = h.dir.file("variants-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var paths: [String] = []
        for (name, data) in files {
            try data.write(to: URL(fileURLWithPath: folder + "/" + name))
            paths.append(folder + "/" + name)
        }
        let out = try h.stackline(["submit", "--wait", "--timeout", "200", "--json"] + paths)
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]], "\(out.summary)")
        return (out.status, entries, out.stderr)
    }

    func fingerprint(_ entry: [String: Any]) -> String? {
        ((entry["report"] as? [String: Any])?["group"] as? [String: Any])?["fingerprint"] as? String
    }

    func report(_ entry: [String: Any]) -> [String: Any] { entry["report"] as? [String: Any] ?? [:] }

    static func crlf(_ data: Data) -> Data {
        Data(String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\n", with: "\r\n").utf8)
    }

    @Test func encodingVariantsLandInThePlainSamplesGroups() throws {
        let h = try Harness()
        let master = try h.startMaster(["--workers", "2"])
        defer { master.signal(SIGTERM); _ = try? master.waitForExit() }
        let crash = try Self.sample("apple-crash/handcrafted.txt")
        let ips = try Self.sample("ips/multithread-test.ips")
        let kscrash = try Self.sample("kscrash/raw.json")
        let tombstone = try Self.sample("android/ndk-stack-multiple.txt")
        let firstTombstone = Data(String(decoding: tombstone, as: UTF8.self).components(separatedBy: "\n*** *** ***")[0].utf8)
        let bom = Data([0xEF, 0xBB, 0xBF])
        let studio = Data(String(decoding: firstTombstone, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .map { "03-12 12:20:39.345  F  [30472/30472] DEBUG    " + $0 }.joined(separator: "\n").utf8)
        let run = try submit(h, [
            ("a.crash", crash), ("a-crlf.crash", Self.crlf(crash)),
            ("b.ips", ips), ("b-blank.ips", Data("\n\n".utf8) + ips), ("b-bom.ips", bom + ips),
            ("c.json", kscrash), ("c-bom.json", bom + kscrash), ("c-bom-crlf.json", bom + Self.crlf(kscrash)),
            ("d.txt", firstTombstone), ("d-studio.txt", studio), ("d-crlf.txt", Self.crlf(firstTombstone)),
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let byInput = Dictionary(uniqueKeysWithValues: run.entries.map { (($0["input"] as? String).map { ($0 as NSString).lastPathComponent } ?? "?", $0) })
        for (plain, variants) in [("a.crash", ["a-crlf.crash"]), ("b.ips", ["b-blank.ips", "b-bom.ips"]),
                                  ("c.json", ["c-bom.json", "c-bom-crlf.json"]), ("d.txt", ["d-studio.txt", "d-crlf.txt"])] {
            let expected = try #require(byInput[plain].flatMap(fingerprint), "\(plain): \(byInput[plain] ?? [:])")
            for variant in variants {
                #expect(byInput[variant].flatMap(fingerprint) == expected, "\(variant) vs \(plain): \(byInput[variant] ?? [:])")
                #expect(byInput[variant]?["state"] as? String == "done")
            }
        }
        // The tombstone's own abort message, as the file writes it, reaches the report.
        let message = (report(byInput["d-studio.txt"] ?? [:])["exception"] as? [String: Any])?["message"] as? String
        #expect(message == "FORTIFY: strlcat: prevented 5-byte write into 4-byte buffer")
    }

    @Test func capturesSplitAndCutShortReportsAreRefusedByName() throws {
        let h = try Harness()
        let master = try h.startMaster(["--workers", "2"])
        defer { master.signal(SIGTERM); _ = try? master.waitForExit() }
        let capture = try Self.sample("android/ndk-stack-multiple.txt")
        let banners = String(decoding: capture, as: UTF8.self).components(separatedBy: "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***").count - 1
        let crash = String(decoding: try Self.sample("apple-crash/handcrafted.txt"), as: UTF8.self)
        let headerOnly = Data(crash.components(separatedBy: "\nThread ")[0].utf8)
        let excerpt = try Self.sample("android/ndk-stack-backtrace.txt")
        let stderr = try Self.sample("swift-backtrace/Ledger-index.stderr.txt")
        let run = try submit(h, [("capture.txt", capture), ("header-only.crash", headerOnly), ("excerpt.txt", excerpt), ("stderr.txt", stderr)])
        #expect(run.status == 1, "the header-only report fails, alone")
        let stored = run.entries.filter { ($0["input"] as? String)?.contains("capture.txt#") == true }
        #expect(banners == 2)
        #expect(stored.count == banners, "one report per crash: \(run.entries)")
        #expect(Set(stored.compactMap { $0["reportId"] as? Int }).count == banners)
        #expect(stored.allSatisfy { $0["state"] as? String == "done" })
        let refused = run.entries.first { ($0["input"] as? String)?.hasSuffix("header-only.crash") == true }
        #expect((refused?["error"] as? String)?.contains("Apple crash report with no threads") == true, "\(refused ?? [:])")
        let fromExcerpt = run.entries.first { ($0["input"] as? String)?.hasSuffix("excerpt.txt") == true }
        #expect(fromExcerpt?["state"] as? String == "done", "\(fromExcerpt ?? [:])")
        // The Swift report inside stderr: its first line is the runtime's own trap message.
        let swift = report(run.entries.first { ($0["input"] as? String)?.hasSuffix("stderr.txt") == true } ?? [:])
        let firstLine = String(decoding: stderr, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
        let trap = try #require(firstLine.range(of: "Fatal error: ").map { String(firstLine[$0.lowerBound...]) })
        #expect((swift["exception"] as? [String: Any])?["message"] as? String == trap)
        #expect(((swift["group"] as? [String: Any])?["title"] as? String)?.hasPrefix(trap + " in ") == true, "\(swift["group"] ?? "")")
    }
}
