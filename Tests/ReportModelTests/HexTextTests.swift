import Foundation
import ReportModel
import TestSupport
import Testing

/// Hex bytes read back: against the test's own random bytes spelled by coreutils' `od`,
/// an independent writer, in both cases; odd counts and stray characters are refused.
@Suite struct HexTextTests {
    @Test func readsWhatOdWritesInEitherCase() throws {
        let dir = try TempDirectory("hex")
        defer { dir.remove() }
        var generator = SeededGenerator(seed: 0x4845_5854)
        for size in [0, 1, 2, 15, 16, 255, 4096] {
            let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let path = dir.file("bytes-\(size)")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let written = try runProcess("/usr/bin/od", ["-An", "-v", "-tx1", path]).stdout.filter { !$0.isWhitespace }
            #expect(HexText.bytes(written.utf8) == bytes, "size \(size)")
            #expect(HexText.bytes(written.uppercased().utf8) == bytes, "size \(size), upper case")
            #expect(HexText.lowercase(bytes) == written)
        }
        for refused in ["a", "abc", "0g", "zz", " 0", "0x00", "ab\n"] {
            #expect(HexText.bytes(refused.utf8) == nil, "\(refused)")
        }
    }
}
