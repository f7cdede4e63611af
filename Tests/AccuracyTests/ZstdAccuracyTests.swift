import Foundation
import Testing
import TestSupport

/// Binaries whose debug sections binutils' objcopy compressed with zstd, through the real
/// `stackline`: `symbols add` stores them and builds their symcache, and every `.text`
/// instruction answers, through the symcache and through the DWARF path (`lookup --obj`), as
/// llvm-symbolizer does and as Stackline does on the uncompressed file.
///
/// llvm-symbolizer 14 (and the Swift toolchain's) was built without zstd, so it reads the file
/// that objcopy decompressed again (binutils' own libzstd decoder): the oracle never shares
/// Stackline's decompression.
@Suite("zstd-compressed debug sections against llvm-symbolizer", .serialized)
struct ZstdAccuracyTests {
    @Test("every .text instruction, through the symcache and the DWARF path", arguments: ["c-gcc-pie", "cpp-clang", "swift-O"])
    func zstdFixture(name: String) throws {
        let fixture = try sharedElfFixtures.get().named(name)
        let buildID = try #require(fixture.buildID)
        let scratch = try makeTemporaryDirectory(prefix: "stackline-zstd")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let zstd = scratch + "/\(name).zstd", decompressed = scratch + "/\(name).unz"
        try runChecked("objcopy", ["--compress-debug-sections=zstd", fixture.unstripped, zstd])
        try runChecked("objcopy", ["--decompress-debug-sections", zstd, decompressed])
        let compressedFlags = try runChecked("readelf", ["-SW", zstd]).stdout.split(separator: "\n").filter { $0.contains(".debug_info") }
        #expect(compressedFlags.count == 1 && compressedFlags[0].split(separator: " ").contains("C"), "objcopy left .debug_info uncompressed: \(compressedFlags)")

        // `symbols add` of the zstd file: stored, with a symcache, without a word on stderr.
        let store = scratch + "/store", plainStore = scratch + "/plain"
        let added = try runStackline(["symbols", "add", "--symbols", store, zstd])
        try #require(added.succeeded, "symbols add: \(added.summary)")
        #expect(added.stderr.isEmpty && added.stdout.contains("DWARF"), "symbols add: \(added.summary)")
        let symcache = store + "/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).symcache"
        #expect(FileManager.default.fileExists(atPath: symcache), "no symcache at \(symcache)")
        // Stored as it came (debuginfod serves the stored bytes): compressed, not inflated.
        let stored = store + "/.build-id/\(buildID.prefix(2))/\(buildID.dropFirst(2)).debug"
        #expect(FileManager.default.contentsEqual(atPath: stored, andPath: zstd), "the store holds other bytes than \(zstd)")
        try #require(try runStackline(["symbols", "add", "--symbols", plainStore, fixture.unstripped]).succeeded)

        let addresses = try instructionAddresses(in: fixture.unstripped)
        let throughCache = try StacklineLookup.lookup(store: store, buildID: buildID, addresses)
        let uncompressed = try StacklineLookup.lookup(store: plainStore, buildID: buildID, addresses)
        let dwarfRun = try runStackline(["lookup", "--obj", zstd, "--json"], stdin: addresses.map(hex).joined(separator: "\n") + "\n")
        try #require(dwarfRun.succeeded, "lookup --obj: \(dwarfRun.summary)")
        let throughDWARF = try StacklineLookup.parseJSON(dwarfRun.stdout)
        for (path, answers) in [("symcache", throughCache), ("DWARF path", throughDWARF)] {
            let differing = addresses.indices.filter { answers.demangled[$0] != uncompressed.demangled[$0] || answers.raw[$0] != uncompressed.raw[$0] }
            #expect(differing.isEmpty, "\(name) \(path): \(differing.count) of \(addresses.count) differ from the uncompressed file, first at \(differing.first.map { hex(addresses[$0]) } ?? "-")")
        }

        // The oracles, on objcopy's decompression; held to what the uncompressed file scores.
        let r = try measureAgreement(name: "\(name) (zstd)", file: decompressed, buildID: buildID, addresses: addresses, store: store)
        printReport(r)
        let baseline = try measureAgreement(name: name, file: fixture.unstripped, buildID: buildID, addresses: addresses, store: plainStore)
        #expect(Double(r.oracleWithFunction) / Double(max(r.addresses, 1)) >= 0.9, "llvm-symbolizer knew few functions: is it reading \(decompressed)?")
        #expect(r.oracleWithLine > r.addresses / 10, "llvm-symbolizer knew few lines: is it reading \(decompressed)?")
        #expect(r.agreeing == r.addresses, "\(name) zstd: \(r.addresses - r.agreeing) disagreements (uncompressed: \(baseline.addresses - baseline.agreeing))")
        #expect(r.symbolsAgreeing == r.addresses, "\(name) zstd raw names (uncompressed: \(baseline.addresses - baseline.symbolsAgreeing) disagreements)")
    }

    /// The refusal names the section and the damage, not "DWARF unreadable", and stores nothing.
    @Test func corruptZstdSectionIsRefusedWithTheReason() throws {
        let fixture = try sharedElfFixtures.get().named("c-gcc-pie")
        let scratch = try makeTemporaryDirectory(prefix: "stackline-zstd")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let zstd = scratch + "/c.zstd"
        try runChecked("objcopy", ["--compress-debug-sections=zstd", fixture.unstripped, zstd])
        let line = try #require(try runChecked("readelf", ["-SW", zstd]).stdout.split(separator: "\n").first { $0.contains(" .debug_info ") })
        let c = line[line.index(after: line.firstIndex(of: "]")!)...].split(separator: " ")
        let offset = try #require(Int(c[3], radix: 16)), size = try #require(Int(c[4], radix: 16))
        var bytes = try Data(contentsOf: URL(fileURLWithPath: zstd))
        // The second half of the zstd frame (after the 24-byte compression header) overwritten.
        for i in offset + 24 + (size - 24) / 2..<offset + size { bytes[i] = 0xff }
        try bytes.write(to: URL(fileURLWithPath: zstd))
        let store = scratch + "/store"
        let added = try runStackline(["symbols", "add", "--symbols", store, zstd])
        #expect(!added.succeeded)
        #expect(added.stderr.contains("section .debug_info: zstd data corrupt at byte "), "\(added.summary)")
        #expect(!added.stderr.contains("DWARF unreadable"), "\(added.summary)")
        let id = try #require(fixture.buildID)
        let stored = store + "/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).debug"
        #expect(!FileManager.default.fileExists(atPath: stored), "stored anyway at \(stored)")
    }
}
