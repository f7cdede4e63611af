import Compression
import StacklineZlib
import Foundation
import TestSupport
import Testing

@Suite struct ZlibTests {
    /// gzip output of the system `gzip` tool, so the decoder is checked against an independent encoder.
    func systemGzip(_ data: Data, dir: TempDirectory) throws -> Data {
        let path = dir.file("input-\(UUID().uuidString.prefix(6))")
        try data.write(to: URL(fileURLWithPath: path))
        try runProcess("/usr/bin/gzip", ["-9", "-n", path])
        return try Data(contentsOf: URL(fileURLWithPath: path + ".gz"))
    }

    @Test func inflatesSystemGzip() throws {
        let dir = try TempDirectory("zlib")
        defer { dir.remove() }
        let text = Data((0..<200_000).map { UInt8(ascii: "a") + UInt8($0 % 26) })
        let gz = try systemGzip(text, dir: dir)
        #expect(Zlib.isGzip(gz))
        #expect(!Zlib.isGzip(text))
        #expect(try Zlib.inflate(gz) == text)
    }

    @Test func inflatesConcatenatedMembers() throws {
        let dir = try TempDirectory("zlib")
        defer { dir.remove() }
        let a = try systemGzip(Data("first ".utf8), dir: dir)
        let b = try systemGzip(Data("second".utf8), dir: dir)
        #expect(try Zlib.inflate(a + b) == Data("first second".utf8))
    }

    @Test func refusesABombWithoutInflatingIt() throws {
        let dir = try TempDirectory("zlib")
        defer { dir.remove() }
        // 80 MiB of zeros compress to ~80 KiB.
        let path = dir.file("bomb")
        try runProcess("/bin/sh", ["-c", "head -c 83886080 /dev/zero | gzip -9 > \(path).gz"])
        let bomb = try Data(contentsOf: URL(fileURLWithPath: path + ".gz"))
        #expect(bomb.count < 1 << 20)
        #expect(throws: CompressionError.tooLarge(limit: 64 << 20)) { try Zlib.inflate(bomb, limit: 64 << 20) }
        #expect(throws: CompressionError.tooLarge(limit: 1000)) { try Zlib.inflate(bomb, limit: 1000) }
    }

    @Test func reportsTruncationAndCorruption() throws {
        let dir = try TempDirectory("zlib")
        defer { dir.remove() }
        let gz = try systemGzip(Data(String(repeating: "crash report ", count: 1000).utf8), dir: dir)
        #expect(throws: CompressionError.truncated) { try Zlib.inflate(gz.prefix(gz.count / 2)) }
        var corrupt = gz
        for i in stride(from: 12, to: corrupt.count - 8, by: 7) { corrupt[i] ^= 0x5a }
        #expect(throws: (any Error).self) { try Zlib.inflate(corrupt) }
    }

    /// The gzip trailer's size is only a hint for the output buffer: a trailer that lies (too
    /// small, too large, or a member's size within several) changes nothing but the CRC check,
    /// which still refuses a member whose size field is wrong.
    @Test func inflatesWhateverTheTrailerClaims() throws {
        let dir = try TempDirectory("zlib")
        defer { dir.remove() }
        let text = Data((0..<300_000).map { UInt8(ascii: "a") + UInt8(($0 * 31) % 26) })
        let gz = try systemGzip(text, dir: dir)
        let small = try systemGzip(Data("small".utf8), dir: dir)
        // Several members: the last trailer names only the last member's 5 bytes.
        #expect(try Zlib.inflate(gz + small + gz) == text + Data("small".utf8) + text)
        // Trailing zero padding after the last member, as some tools write.
        #expect(try Zlib.inflate(gz + Data(count: 16)) == text)
        var lying = gz
        lying.replaceSubrange(lying.count - 4..<lying.count, with: [0xff, 0xff, 0xff, 0x7f])
        #expect(throws: (any Error).self) { try Zlib.inflate(lying) }
    }

    /// A gzip header may carry its own CRC-16 (FHCRC). libdeflate skips it unchecked; zlib
    /// checks it, and so must `inflate`: a wrong one is refused with zlib's words, a right one
    /// inflates. (Found by the `inflate` fuzz target.)
    @Test func checksTheGzipHeaderCRC() throws {
        let dir = try TempDirectory("zlib")
        defer { dir.remove() }
        let text = Data("a header with its own checksum".utf8)
        let plain = try systemGzip(text, dir: dir)
        var header = Array(plain.prefix(10))
        header[3] |= 0x02
        let crc = UInt32(truncatingIfNeeded: crc32(0, header, UInt32(header.count)))
        let right = Data(header) + Data([UInt8(crc & 0xff), UInt8(crc >> 8 & 0xff)]) + plain.dropFirst(10)
        let wrong = Data(header) + Data([UInt8(~crc & 0xff), UInt8(crc >> 8 & 0xff)]) + plain.dropFirst(10)
        #expect(try Zlib.inflate(right) == text)
        #expect(throws: CompressionError.corrupt("header crc mismatch")) { try Zlib.inflate(wrong) }
    }

    /// The limit is the output's exact allowance, whatever buffer size the first guess took.
    @Test func limitIsExact() throws {
        let dir = try TempDirectory("zlib")
        defer { dir.remove() }
        let text = Data(String(repeating: "frame 0x1000 ", count: 40_000).utf8)
        for packed in [try systemGzip(text, dir: dir), Zlib.compress(text)] {
            #expect(try Zlib.inflate(packed, limit: text.count) == text)
            #expect(throws: CompressionError.tooLarge(limit: text.count - 1)) { try Zlib.inflate(packed, limit: text.count - 1) }
            #expect(throws: CompressionError.tooLarge(limit: 3_000_000)) {
                try Zlib.inflate(packed + packed + packed + packed + packed + packed, limit: 3_000_000)
            }
        }
    }

    @Test func zlibRoundTrip() throws {
        let data = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let packed = Zlib.compress(data)
        #expect(packed.count < data.count)
        #expect(try Zlib.inflate(packed, limit: data.count) == data)
        #expect(try Zlib.inflate(Zlib.compress(Data())) == Data())
    }

    /// The master's check of every result: yes at the exact size zlib's own encoder (Python's
    /// zlib module, not libdeflate) compressed, no at any other size, no for a cut or damaged
    /// stream, no for a stream with another one behind it.
    @Test func inflatesExactlyOnlyAtTheTrueSize() throws {
        let dir = try TempDirectory("zlib")
        defer { dir.remove() }
        let text = Data(String(repeating: "{\"function\":\"main\",\"line\":12}", count: 300).utf8)
        let input = dir.file("text")
        try text.write(to: URL(fileURLWithPath: input))
        try runProcess("/usr/bin/python3", [
            "-c", "import sys, zlib; d = open(sys.argv[1], 'rb').read(); open(sys.argv[1] + '.z', 'wb').write(zlib.compress(d, 6))",
            input,
        ])
        let z = try Data(contentsOf: URL(fileURLWithPath: input + ".z"))
        #expect(Zlib.inflatesExactly(z, size: text.count))
        for size in [0, 1, text.count - 1, text.count + 1, 4 * text.count] {
            #expect(!Zlib.inflatesExactly(z, size: size), "size \(size)")
        }
        #expect(!Zlib.inflatesExactly(z.prefix(z.count - 5), size: text.count))
        var damaged = z
        damaged[damaged.count / 2] ^= 0x21
        #expect(!Zlib.inflatesExactly(damaged, size: text.count))
        #expect(!Zlib.inflatesExactly(z + z, size: text.count))
        #expect(Zlib.inflatesExactly(z + z, size: 2 * text.count))
        #expect(!Zlib.inflatesExactly(Data(), size: 0))
    }
}
