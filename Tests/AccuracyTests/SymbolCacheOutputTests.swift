import Foundation
import Testing
import TestSupport

/// `stackline lookup --build-id` answers from the symcache `symbols add` wrote, writing straight
/// from its mapped bytes; `--obj` on the same stored debug file answers through DWARF. The two
/// outputs must be the same bytes in every mode: text and `--json`, both `--demangle` styles,
/// return addresses, a load address (and for Mach-O arm64, pointer-authentication bits).
@Suite("lookup from a symcache prints what the DWARF path prints")
struct SymbolCacheOutputTests {
    static let modes: [[String]] = [
        [], ["--json"], ["--demangle", "simplified"], ["--json", "--demangle", "simplified"],
        ["--return-addresses"], ["--json", "--return-addresses", "--load-address", "0x7f0000000000"],
    ]

    /// Runs both paths over `addresses` (stdin, one per line) in every mode.
    func compare(store: String, id: String, debugFile: String, arch: [String], addresses: [UInt64], name: String) throws {
        let symcache = store + "/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).symcache"
        #expect(FileManager.default.fileExists(atPath: symcache), "\(name): symbols add wrote no symcache")
        for mode in Self.modes {
            // With a load address the input is runtime addresses; the PAC bits (arm64e-style
            // signatures in the top byte) must be masked alike on both paths.
            let slid = mode.contains("--load-address")
            let input = addresses.map { a in hex(slid ? a &- 0x1_0000_0000 &+ 0x7f00_0000_0000 : a) }.joined(separator: "\n") + "\n"
            let viaCache = try runStackline(["lookup", "--symbols", store, "--build-id", id] + mode, stdin: input)
            let viaDWARF = try runStackline(["lookup", "--obj", debugFile] + arch + mode, stdin: input)
            #expect(viaCache.succeeded && viaDWARF.succeeded, "\(name) \(mode): \(viaCache.summary) / \(viaDWARF.summary)")
            #expect(viaCache.stderr.isEmpty, "\(name) \(mode): the symcache was not used: \(viaCache.stderr)")
            #expect(viaCache.stdout == viaDWARF.stdout, "\(name) \(mode): outputs differ")
            #expect(!viaCache.stdout.isEmpty)
        }
    }

    @Test(arguments: ["cpp-clang", "swift-O", "c-gcc-symtab-only"])
    func elf(fixtureName: String) throws {
        let fixture = try sharedElfFixtures.get().named(fixtureName)
        let id = try #require(fixture.buildID)
        let store = try TempDirectory("stackline-symcache-output")
        defer { store.remove() }
        let added = try runStackline(["symbols", "add", "--symbols", store.path, fixture.unstripped])
        try #require(added.succeeded, "symbols add: \(added.summary)")
        let stored = store.path + "/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).debug"
        try compare(store: store.path, id: id, debugFile: stored, arch: [], addresses: try instructionAddresses(in: fixture.unstripped), name: fixtureName)
    }

    @Test(arguments: ["arm64", "x86_64"])
    func machO(arch: String) throws {
        let store = try TempDirectory("stackline-symcache-output")
        defer { store.remove() }
        let added = try runStackline(["symbols", "add", "--symbols", store.path, MachOFixtures.dSYM])
        try #require(added.succeeded, "symbols add: \(added.summary)")
        let id = try #require(try MachOFixtures.uuids(MachOFixtures.dSYMDWARF)[arch]).lowercased()
        var addresses = try instructionAddresses(in: MachOFixtures.executable, section: "__text", arch: arch)
        // Signed return addresses as an arm64e crash report carries them.
        if arch == "arm64" { addresses += addresses.prefix(50).map { $0 | 0x002a_0000_0000_0000 } }
        try compare(store: store.path, id: id, debugFile: MachOFixtures.dSYMDWARF, arch: ["--arch", arch], addresses: addresses, name: "Sample.dSYM \(arch)")
    }
}
