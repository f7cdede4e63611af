import DebugInfo
import Foundation
import SymbolCache
import TestSupport
import Testing

/// A damaged, old or stale symcache is refused at open with a `SymbolCacheError`: never a crash,
/// never a wrong answer.
@Suite struct SymbolCacheIntegrityTests {
    let scratch: TempDirectory
    let original: [UInt8]
    let source: SymbolCacheSource

    init() throws {
        scratch = try TempDirectory("stackline-symcache-integrity")
        // A dSYM with DWARF: every section (blocks, segments, functions, strings, blob) is non-empty.
        let path = scratch.file("good.symcache")
        source = try SymbolCacheSource(file: RegularFile(path: MachOFixtures.dylibDWARF))
        try SymbolCache.write(from: DebugFile(machO: MachOFixtures.dylibDWARF, arch: "arm64"), key: SymbolCacheKey(source: source), to: path)
        original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        _ = try SymbolCache(path: path, expecting: SymbolCacheKey(source: source))
    }

    private func open(_ bytes: [UInt8], expecting: SymbolCacheKey? = nil) -> Result<SymbolCache, SymbolCacheError> {
        let path = scratch.file("damaged.symcache")
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        do throws(SymbolCacheError) { return .success(try SymbolCache(path: path, expecting: expecting ?? SymbolCacheKey(source: source))) } catch { return .failure(error) }
    }

    @Test func truncatedIsRefused() {
        defer { scratch.remove() }
        var lengths = [0, 1, 7, 8, 11, 12, 64, 127, 128, 129, 255, 256, 257, original.count / 2, original.count - 8, original.count - 1]
        lengths += stride(from: 0, to: original.count, by: max(1, original.count / 97)).map { $0 }
        for n in lengths {
            switch open(Array(original.prefix(n))) {
            case .success: Issue.record("a symcache cut to \(n) of \(original.count) bytes opened")
            case .failure(let e):
                if n < original.count && n >= 256 { #expect(e == .truncated(path: scratch.file("damaged.symcache"), expected: UInt64(original.count), found: UInt64(n))) }
            }
        }
    }

    /// One bit flipped at a time, at positions spread over the header, every table and the blob.
    @Test func bitFlipsAreRefused() {
        defer { scratch.remove() }
        var positions = Array(0..<256)
        positions += stride(from: 256, to: original.count, by: max(1, original.count / 400)).map { $0 }
        positions.append(original.count - 1)
        var refused: [String: Int] = [:]
        for p in positions {
            for bit in [0, 3, 7] where !(p == 0 && bit == 0 && false) {
                var damaged = original
                damaged[p] ^= UInt8(1 << bit)
                switch open(damaged) {
                case .success: Issue.record("a symcache with bit \(bit) of byte \(p) flipped opened")
                case .failure(let e): refused["\(e)".split(separator: ":").dropFirst().first.map(String.init) ?? "", default: 0] += 1
                }
            }
        }
        print("[symcache] \(positions.count * 3) bit flips refused: \(refused)")
    }

    @Test func oldVersionIsRefused() {
        defer { scratch.remove() }
        for version: UInt32 in [0, SymbolCache.formatVersion + 1] {
            var patched = original
            withUnsafeBytes(of: version.littleEndian) { for i in 0..<4 { patched[8 + i] = $0[i] } }
            guard case .failure(let e) = open(patched) else { Issue.record("version \(version) opened"); continue }
            #expect(e == .unsupportedVersion(path: scratch.file("damaged.symcache"), found: version))
        }
    }

    @Test func staleSourceIsRefused() {
        defer { scratch.remove() }
        for other in [
            SymbolCacheSource(size: source.size + 1, modifiedNanoseconds: source.modifiedNanoseconds, inode: source.inode),
            SymbolCacheSource(size: source.size, modifiedNanoseconds: source.modifiedNanoseconds + 1, inode: source.inode),
            SymbolCacheSource(size: source.size, modifiedNanoseconds: source.modifiedNanoseconds, inode: source.inode + 1),
        ] {
            guard case .failure(let e) = open(original, expecting: SymbolCacheKey(source: other)) else { Issue.record("stale symcache opened"); continue }
            #expect(e == .staleSource(path: scratch.file("damaged.symcache")))
        }
    }

    @Test func notASymcacheIsRefused() {
        defer { scratch.remove() }
        guard case .failure(let e) = open(Array(repeating: 0x41, count: 4096)) else { Issue.record("opened"); return }
        #expect(e == .notASymcache(path: scratch.file("damaged.symcache")))
    }

    /// A file whose checksums are right but whose references are not (what a fuzzer or an
    /// attacker writes, not what damage does) is refused by the structural checks.
    @Test func validChecksumsWithBadReferencesAreRefused() throws {
        defer { scratch.remove() }
        // Format version 4's sections (docs/symcache.md, "Layout").
        let blocks = Int(read32(original, 76)), callers = Int(read32(original, 80)), functions = Int(read32(original, 96))
        let stream = Int(read32(original, 152))
        let blockOffsets = 256 + blocks * 8
        let streamOffset = align(blockOffsets + blocks * 4)
        let callersOffset = align(streamOffset + stream)
        let functionsOffset = align(callersOffset + callers * 20)
        let stringEnds = functionsOffset + functions * 20
        let strings = Int(read32(original, 84)), stringBlocks = Int(read32(original, 124))
        let stringBlocksOffset = stringEnds + strings * 4
        let named = try #require((0..<functions).map { functionsOffset + $0 * 20 }.first { read32(original, $0 + 8) != 0xffff_ffff })
        try #require(blocks >= 2 && functions > 0 && stringBlocks >= 1, "the fixture fills at least two blocks")
        var cases: [(String, Int, UInt32)] = [
            ("blocks out of order", 256 + 8, 0),
            ("a block beginning inside another", blockOffsets + 4, read32(original, blockOffsets + 4) - 1),
            ("a segment with an unknown tag", streamOffset, 0xFF),
            ("function name out of range", functionsOffset + 8, 0x7fff_ffff),
            ("function without its demangled name", named + 12, 0xffff_ffff),
            ("string block past the compressed strings", stringBlocksOffset, read32(original, 40) + 1),
            ("string block ending inside a string", stringBlocksOffset + 4, read32(original, stringBlocksOffset + 4) - 1),
            ("string past the blob", stringEnds, 0x7fff_fff0),
            ("more functions than the file holds", 96, UInt32(functions) + 1),
            ("more blocks than the segments fill", 76, UInt32(blocks) + 1),
        ]
        if callers > 0 {
            cases.append(("caller function out of range", callersOffset, UInt32(functions)))
            cases.append(("a caller calling itself", callersOffset + 16, 0))
        }
        for (what, offset, value) in cases {
            var patched = original
            write32(&patched, offset, value)
            resealed(&patched)
            guard case .failure(let e) = open(patched) else { Issue.record("\(what): opened"); continue }
            guard case .corrupt = e else { Issue.record("\(what): \(e)"); continue }
        }
    }

    private func align(_ n: Int) -> Int { (n + 7) & ~7 }
    private func read32(_ b: [UInt8], _ o: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[o + $1]) << (8 * $1) } }
    private func write32(_ b: inout [UInt8], _ o: Int, _ v: UInt32) { for i in 0..<4 { b[o + i] = UInt8(truncatingIfNeeded: v >> (8 * i)) } }

    /// Recomputes both CRC-32s (zlib's polynomial, bit by bit: an oracle independent of libdeflate).
    private func resealed(_ b: inout [UInt8]) {
        write32(&b, 28, crc32(b[256...]))
        write32(&b, 24, 0)
        write32(&b, 24, crc32(b[..<256]))
    }

    private func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xedb8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
