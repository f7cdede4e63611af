import Foundation
import Testing
import TestSupport

/// The symcache in the lookup path of the real `stackline`: `symbols add` writes it, lookups
/// answer from it as llvm-symbolizer does, and one that is damaged, truncated, emptied or built
/// from another file is never used: the lookup answers from the debug file, says so on stderr,
/// and writes a good one back.
@Suite("Symcache in the lookup path", .serialized)
struct SymbolCacheLookupTests {
    /// Ways a symcache on disk goes wrong; each must cost a rebuild, never an answer.
    enum Damage: String, CaseIterable, Sendable, CustomStringConvertible {
        case truncatedToHalf = "truncated to half"
        case bitFlipInTheMiddle = "one bit flipped in the middle"
        case bitFlipNearTheEnd = "one bit flipped near the end"
        case bitFlipInTheHeader = "one bit flipped in the header"
        case empty = "emptied"
        case otherFile = "replaced by the debug file itself"
        case staleSource = "the debug file changed after it was built"
        var description: String { rawValue }
    }

    @Test("symbols add writes a symcache; damaged ones are warned about, not used, and rebuilt", arguments: ["cpp-clang", "swift-O"])
    func damagedSymbolCaches(fixtureName: String) throws {
        let fixture = try sharedElfFixtures.get().named(fixtureName)
        let buildID = try #require(fixture.buildID)
        let store = try makeTemporaryDirectory(prefix: "stackline-symcache")
        defer { try? FileManager.default.removeItem(atPath: store) }
        let added = try runStackline(["symbols", "add", "--symbols", store, fixture.stripped ?? fixture.unstripped] + (fixture.debugFile.map { [$0] } ?? []))
        try #require(added.succeeded, "symbols add: \(added.summary)")
        #expect(added.stderr.isEmpty, "symbols add warned: \(added.stderr)")
        let path = store + "/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).symcache"
        let debugPath = store + "/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).debug"
        let intact = try #require(FileManager.default.contents(atPath: path), "symbols add wrote no symcache at \(path)")
        #expect(intact.count > 0)
        let shown = try runStackline(["symbols", "show", "--symbols", store, buildID])
        #expect(shown.stdout.contains("symcache\t\(path)"), "symbols show: \(shown.stdout)")

        // Through the symcache, every instruction answers as llvm-symbolizer (or eu-addr2line) does.
        let addresses = try instructionAddresses(in: fixture.unstripped)
        let baseline = try measureAgreement(fixture, store: store)
        printReport(baseline)
        #expect(baseline.rate == 1.0, "\(fixtureName) through the symcache: \(baseline.disagreements.prefix(5))")
        #expect(baseline.symbolRate == 1.0, "\(fixtureName) raw names through the symcache")

        let probe = addresses[addresses.count / 2]
        let expected = try runStackline(["lookup", "--symbols", store, "--build-id", buildID, hex(probe)])
        try #require(expected.succeeded && expected.stderr.isEmpty, "lookup with an intact symcache: \(expected.summary)")
        for damage in Damage.allCases {
            try damageSymbolCache(damage, path: path, debugPath: debugPath, intact: intact)
            let first = try runStackline(["lookup", "--symbols", store, "--build-id", buildID, hex(probe)])
            #expect(first.succeeded, "\(damage): \(first.summary)")
            #expect(first.stdout == expected.stdout, "\(damage): the answer changed")
            #expect(
                first.stderr.contains("symcache for build-id \(buildID) not used"), "\(damage): no warning, stderr: \(first.stderr)")
            // Rebuilt: the next process maps it without a word.
            let second = try runStackline(["lookup", "--symbols", store, "--build-id", buildID, hex(probe)])
            #expect(second.stdout == expected.stdout && second.stderr.isEmpty, "\(damage): not rebuilt: \(second.summary)")
            if damage != .staleSource {
                let rebuilt = try #require(FileManager.default.contents(atPath: path), "\(damage): no symcache after the rebuild")
                #expect(Self.tables(rebuilt) == Self.tables(intact), "\(damage): the rebuilt symcache's tables differ from the first build's")
            }
        }
        let after = try measureAgreement(fixture, store: store)
        #expect(after.rate == 1.0 && after.symbolRate == 1.0, "\(fixtureName) after the rebuilds")

        // `symbols reindex` rewrites it; `symbols rm` takes it away with the entry.
        let reindexed = try runStackline(["symbols", "reindex", "--symbols", store, buildID])
        #expect(reindexed.succeeded && reindexed.stdout.hasPrefix("indexed  \(buildID)"), "reindex: \(reindexed.summary)")
        let removed = try runStackline(["symbols", "rm", "--symbols", store, buildID])
        #expect(removed.succeeded, "rm: \(removed.summary)")
        #expect(!FileManager.default.fileExists(atPath: path), "symbols rm left the symcache")
    }

    @Test("a symcache of another format version is rebuilt")
    func otherFormatVersion() throws {
        let fixture = try sharedElfFixtures.get().named("c-gcc-pie")
        let buildID = try #require(fixture.buildID)
        let store = try makeTemporaryDirectory(prefix: "stackline-symcache")
        defer { try? FileManager.default.removeItem(atPath: store) }
        let added = try runStackline(["symbols", "add", "--symbols", store, fixture.stripped!, fixture.debugFile!])
        try #require(added.succeeded, "symbols add: \(added.summary)")
        let path = store + "/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).symcache"
        let intact = try #require(FileManager.default.contents(atPath: path))
        let probe = try instructionAddresses(in: fixture.unstripped).first!
        let expected = try runStackline(["lookup", "--symbols", store, "--build-id", buildID, hex(probe)])
        // The version is the little-endian word after the 8-byte magic (docs/symcache.md, "Layout").
        var older = intact
        let version = older[8..<12].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        withUnsafeBytes(of: (version &- 1).littleEndian) { older.replaceSubrange(8..<12, with: $0) }
        try older.write(to: URL(fileURLWithPath: path))
        let first = try runStackline(["lookup", "--symbols", store, "--build-id", buildID, hex(probe)])
        #expect(first.stdout == expected.stdout)
        #expect(first.stderr.contains("version"), "stderr: \(first.stderr)")
        let rebuilt = try #require(FileManager.default.contents(atPath: path))
        #expect(Self.tables(rebuilt) == Self.tables(intact), "not rebuilt")
    }

    /// The version and what the header says the tables hold (docs/symcache.md, "Layout"):
    /// segments, blocks, callers, strings, string bytes, functions and the segment stream's
    /// bytes. Two builds of one file hold the same tables; only the compressed strings' bytes
    /// may differ, by which thread demangled which name (docs/symcache.md, "Names").
    static func tables(_ symcache: Data) -> [UInt64] {
        let bytes = [UInt8](symcache)
        guard bytes.count >= 256 else { return [] }
        func read(_ offset: Int, _ size: Int) -> UInt64 { (0..<size).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * $1) } }
        return [read(8, 4), read(72, 4), read(76, 4), read(80, 4), read(84, 4), read(88, 8), read(96, 4), read(152, 8)]
    }

    private func damageSymbolCache(_ damage: Damage, path: String, debugPath: String, intact: Data) throws {
        var bytes = intact
        switch damage {
        case .truncatedToHalf: bytes = bytes.prefix(bytes.count / 2)
        case .bitFlipInTheMiddle: bytes[bytes.count / 2] ^= 0x10
        case .bitFlipNearTheEnd: bytes[bytes.count - 3] ^= 0x01
        case .bitFlipInTheHeader: bytes[20] ^= 0x04
        case .empty: bytes = Data()
        case .otherFile: bytes = try #require(FileManager.default.contents(atPath: debugPath))
        case .staleSource:
            // As if the store had replaced the debug file: same bytes, another modification time.
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: debugPath)
            return
        }
        try bytes.write(to: URL(fileURLWithPath: path))
    }
}
