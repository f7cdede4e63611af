import Foundation
import Testing
import TestSupport

/// The committed Mach-O fixtures against llvm-symbolizer: every `__text` instruction of both
/// slices (enumerated by llvm-objdump, not by Stackline), through the real `stackline` binary.
@Suite("Mach-O accuracy against llvm-symbolizer")
struct MachOAccuracyTests {
    /// A store holding `files`, added by the real `stackline symbols add`.
    func store(adding files: [String]) throws -> TempDirectory {
        let store = try TempDirectory("stackline-store")
        let added = try runStackline(["symbols", "add", "--symbols", store.path] + files)
        try #require(added.succeeded, "symbols add failed: \(added.summary)")
        return store
    }

    func check(_ r: FixtureAgreement, needLines: Bool) {
        let withFunction = Double(r.oracleWithFunction) / Double(max(r.addresses, 1))
        let withLine = Double(r.oracleWithLine) / Double(max(r.addresses, 1))
        // Agreement on "??" proves nothing: the oracle must actually know these addresses.
        #expect(withFunction >= 0.9, "\(r.name): llvm-symbolizer named a function at only \(percent(withFunction)); is it reading the right slice?")
        if needLines {
            #expect(withLine >= 0.8, "\(r.name): llvm-symbolizer knew a file:line at only \(percent(withLine)); is it reading the right slice?")
        }
        #expect(r.addresses > 100, "\(r.name): only \(r.addresses) instructions")
        #expect(r.rate >= 0.99, "\(r.name): agreement \(percent(r.rate)) is below 99% (see the DIFF lines)")
        #expect(r.symbolRate >= 0.99, "\(r.name): raw symbol agreement \(percent(r.symbolRate)) is below 99% (see the SYMBOL lines)")
    }

    @Test("every __text instruction of both dSYM slices symbolicates like llvm-symbolizer (≥ 99%)", arguments: ["arm64", "x86_64"])
    func dSYMSlice(arch: String) throws {
        let store = try store(adding: [MachOFixtures.dSYM])
        defer { store.remove() }
        let uuid = try #require(try MachOFixtures.uuids(MachOFixtures.dSYMDWARF)[arch], "llvm-dwarfdump lists no \(arch) slice")
        let addresses = try instructionAddresses(in: MachOFixtures.executable, section: "__text", arch: arch)
        let r = try measureAgreement(
            name: "Sample.dSYM \(arch)", file: MachOFixtures.dSYMDWARF + ":" + arch, buildID: uuid,
            addresses: addresses, store: store.path, secondOracle: false)
        printReport(r)
        check(r, needLines: true)
    }

    /// The executable has a symbol table and no DWARF: every answer comes from `LC_SYMTAB`.
    @Test("the symbol-table-only executable answers like llvm-symbolizer (≥ 99%)", arguments: ["arm64", "x86_64"])
    func symbolTableOnly(arch: String) throws {
        // Alone in a directory: next to its dSYM, llvm-symbolizer would read the dSYM instead.
        let scratch = try TempDirectory("stackline-macho")
        defer { scratch.remove() }
        let copy = scratch.file("Sample")
        try FileManager.default.copyItem(atPath: MachOFixtures.executable, toPath: copy)
        let store = try store(adding: [copy])
        defer { store.remove() }
        let uuid = try #require(try MachOFixtures.uuids(copy)[arch])
        let addresses = try instructionAddresses(in: copy, section: "__text", arch: arch)
        let r = try measureAgreement(
            name: "Sample \(arch) (symbol table only)", file: copy + ":" + arch, buildID: uuid,
            addresses: addresses, store: store.path, secondOracle: false)
        printReport(r)
        #expect(r.oracleWithLine == 0, "llvm-symbolizer found line information in a file without DWARF")
        check(r, needLines: false)
    }
}
