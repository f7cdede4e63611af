import Compression
import Foundation
import TestSupport
import Testing

/// `Zlib.inflateUntrusted`, the inflate of network bytes: gzip made by Python's gzip module
/// (the oracle), bombs refused from their trailer or early, real reports inflated unchanged.
extension ZlibTests {
    /// `python3 -c SCRIPT out`: SCRIPT writes its gzip to sys.argv[1]; the bytes it wrote.
    func pythonGzip(_ script: String, dir: TempDirectory) throws -> Data {
        let out = dir.file("py-\(UUID().uuidString.prefix(6)).gz")
        let run = try runProcess("/usr/bin/python3", ["-c", "import gzip, sys, zlib\n" + script, out])
        guard run.status == 0 else { throw TestSupportError("python3: \(run.stderr)") }
        return try Data(contentsOf: URL(fileURLWithPath: out))
    }

    /// A gzip member whose deflate data is not deflate at all, with the trailer's size field
    /// set to `size`: inflating it fails as corrupt, so a refusal as too large or too
    /// compressed proves that nothing was inflated.
    func garbageMember(statingSize size: UInt32) -> Data {
        let header: [UInt8] = [0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0x03]
        let garbage = [UInt8](repeating: 0xff, count: 100)
        let crc: [UInt8] = [0, 0, 0, 0]
        let isize = (0..<4).map { UInt8(truncatingIfNeeded: size >> (8 * $0)) }
        return Data(header + garbage + crc + isize)
    }

    @Test func anHonestBombIsRefusedFromItsTrailerWithoutInflating() throws {
        let limit = 64 << 20
        // Larger than the limit: too large. Under the limit but 400 KiB-fold: too compressed.
        let huge = garbageMember(statingSize: 80 << 20)
        let dense = garbageMember(statingSize: 40 << 20)
        #expect(throws: CompressionError.tooLarge(limit: limit)) { try Zlib.inflateUntrusted(huge, limit: limit) }
        #expect(throws: CompressionError.ratioTooHigh(maxRatio: Zlib.defaultMaxRatio)) { try Zlib.inflateUntrusted(dense, limit: limit) }
        // The data really is corrupt: inflating it says so (the check above never got there).
        for member in [huge, dense] {
            do {
                _ = try Zlib.inflate(member, limit: limit)
                Issue.record("garbage inflated")
            } catch {
                if case .corrupt = error {} else { Issue.record("plain inflate of garbage: \(error)") }
            }
        }

        // A real bomb: 80 MiB of zeros by Python's gzip, about 80 KiB.
        let dir = try TempDirectory("bombs")
        defer { dir.remove() }
        let bomb = try pythonGzip("open(sys.argv[1], 'wb').write(gzip.compress(bytes(80 << 20), 9))", dir: dir)
        #expect(bomb.count < 200_000)
        #expect(throws: CompressionError.tooLarge(limit: limit)) { try Zlib.inflateUntrusted(bomb, limit: limit) }
    }

    /// A trailer that lies (the size patched to 100) or that names only a small last member:
    /// inflating stops at `defaultMaxRatio` times the input, long before the end of the member,
    /// where a wrong size would have been refused as corrupt instead.
    @Test func aBombWhoseTrailerLiesStopsAtTheRatio() throws {
        let dir = try TempDirectory("bombs")
        defer { dir.remove() }
        var lying = try pythonGzip("open(sys.argv[1], 'wb').write(gzip.compress(bytes(80 << 20), 9))", dir: dir)
        lying.replaceSubrange(lying.count - 4..<lying.count, with: [100, 0, 0, 0])
        let ratio = CompressionError.ratioTooHigh(maxRatio: Zlib.defaultMaxRatio)
        #expect(throws: ratio) { try Zlib.inflateUntrusted(lying, limit: 64 << 20) }
        let behindSmall = try pythonGzip(
            "open(sys.argv[1], 'wb').write(gzip.compress(bytes(80 << 20), 9) + gzip.compress(b'small', 9))", dir: dir)
        #expect(throws: ratio) { try Zlib.inflateUntrusted(behindSmall, limit: 64 << 20) }
        // The same bytes with no ratio bound inflate to the limit before they are refused.
        #expect(throws: CompressionError.tooLarge(limit: 64 << 20)) { try Zlib.inflate(behindSmall, limit: 64 << 20) }
    }

    /// Up to `ratioFloor` bytes, any ratio: 1 MiB of zeros inflates, one byte more does not.
    @Test func smallOutputsInflateWhateverTheirRatio() throws {
        let dir = try TempDirectory("bombs")
        defer { dir.remove() }
        let floor = try pythonGzip("open(sys.argv[1], 'wb').write(gzip.compress(bytes(\(Zlib.ratioFloor)), 9))", dir: dir)
        #expect(try Zlib.inflateUntrusted(floor, limit: 64 << 20) == Data(count: Zlib.ratioFloor))
        let past = try pythonGzip("open(sys.argv[1], 'wb').write(gzip.compress(bytes(\(Zlib.ratioFloor + 1)), 9))", dir: dir)
        #expect(throws: CompressionError.ratioTooHigh(maxRatio: Zlib.defaultMaxRatio)) { try Zlib.inflateUntrusted(past, limit: 64 << 20) }
    }

    /// Every real report in Tests/Fixtures/wild, gzipped by Python at levels 1 and 9 (at most
    /// 16.1-fold), inflates to its own bytes; under a limit below its size it is too large.
    @Test func realReportsInflateUnchanged() throws {
        let root = packageRoot + "/Tests/Fixtures/wild"
        let dir = try TempDirectory("bombs")
        defer { dir.remove() }
        var checked = 0
        for case let relative as String in FileManager.default.enumerator(atPath: root)! {
            let path = root + "/" + relative
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                let original = FileManager.default.contents(atPath: path), original.count > 1000
            else { continue }
            for level in [1, 9] {
                let gz = try pythonGzip("open(sys.argv[1], 'wb').write(gzip.compress(open('\(path)', 'rb').read(), \(level)))", dir: dir)
                #expect(try Zlib.inflateUntrusted(gz, limit: 64 << 20) == original, "\(relative) at level \(level)")
                #expect(throws: CompressionError.tooLarge(limit: original.count - 1)) {
                    try Zlib.inflateUntrusted(gz, limit: original.count - 1)
                }
            }
            checked += 1
        }
        #expect(checked >= 20)
    }
}
