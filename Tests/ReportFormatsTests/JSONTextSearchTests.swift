import Foundation
@testable import ReportFormats
import Testing

/// `JSONText.contains` (memchr on the needle's rarest byte) finds exactly what Foundation's
/// `Data.range(of:)` finds, on every real report under Tests/Fixtures.
@Suite struct JSONTextSearchTests {
    @Test func findsWhatFoundationFinds() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures")
        let files = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil))
            .compactMap { $0 as? URL }
            .filter { ["ips", "json", "crash", "txt"].contains($0.pathExtension) }
        #expect(files.count > 20)
        // The keys the formats sniff, and words that are nowhere.
        let keys = [
            "\"binary_images\"", "\"image_addr\"", "\"crash\"", "\"CFBundleExecutable\"", "\"process_name\"",
            "\"crashReport\"", "\"threads\"", "\"bug_type\"", "\"usedImages\"", "x", "\"", "{", "Zq#never~here",
        ]
        var rng = SystemRandomNumberGenerator()
        var checked = 0
        for file in files {
            let data = try Data(contentsOf: file)
            var needles = keys
            // Substrings of the file itself, from one byte up: found by both, wherever they are.
            for length in [1, 2, 5, 17, 64] where data.count > length {
                let start = Int.random(in: 0...(data.count - length), using: &rng)
                if let text = String(data: data[start..<(start + length)], encoding: .utf8) { needles.append(text) }
            }
            for needle in needles {
                let expected = data.range(of: Data(needle.utf8)) != nil
                #expect(JSONText.contains(data, needle) == expected, "\(file.lastPathComponent): \(needle.debugDescription)")
                checked += 1
            }
        }
        #expect(checked > 300)
    }
}
