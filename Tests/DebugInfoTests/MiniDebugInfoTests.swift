import DebugInfo
import Foundation
import TestSupport
import Testing

/// MiniDebugInfo made as Fedora's find-debuginfo.sh makes it (Tests/Fixtures/add-minidebuginfo.sh) (an xz-compressed ELF file of the
/// local functions .dynsym lacks, added as `.gnu_debugdata` to the stripped binary): every
/// `.text` instruction is named as eu-addr2line (elfutils' libdwfl, which reads
/// `.gnu_debugdata` itself) names it.
@Suite struct MiniDebugInfoTests {

    static func hex(_ a: UInt64) -> String { "0x" + String(a, radix: 16) }

    static func make(_ source: String, in scratch: TempDirectory) throws -> String {
        let out = scratch.file("mini")
        try runChecked("/bin/bash", [packageRoot + "/Tests/Fixtures/add-minidebuginfo.sh", source, out])
        return out
    }

    @Test("every .text instruction is named as eu-addr2line names it", arguments: ["c-gcc-pie", "cpp-clang"])
    func namesAgreeWithEuAddr2line(name: String) throws {
        let fixture = try sharedElfFixtures.get().named(name)
        let scratch = try TempDirectory("stackline-minidebuginfo")
        defer { scratch.remove() }
        let mini = try Self.make(fixture.unstripped, in: scratch)
        let elf = try ElfFile(path: mini)
        #expect(!elf.hasSymbolTable && !elf.hasDWARF && elf.sections.contains { $0.name == ".gnu_debugdata" })
        let debug = try DebugFile(elf: elf)
        let addresses = try instructionAddresses(in: fixture.unstripped)
        let oracle = try runChecked("eu-addr2line", ["-f", "-e", mini] + addresses.map(Self.hex)).stdout
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        try #require(oracle.count >= addresses.count * 2, "eu-addr2line gave \(oracle.count) lines")
        var differing = 0, named = 0
        for (i, a) in addresses.enumerated() {
            let expected = oracle[2 * i] == "??" ? nil : oracle[2 * i]
            let got = debug.frames(at: a).last?.symbol
            if expected != nil { named += 1 }
            if got != expected {
                differing += 1
                if differing <= 5 { Issue.record("\(name) at \(Self.hex(a)): stackline \(got ?? "??"), eu-addr2line \(expected ?? "??")") }
            }
        }
        #expect(differing == 0, "\(name): \(differing) of \(addresses.count) differ")
        // Without .gnu_debugdata only .dynsym answers: the test proves MiniDebugInfo was used.
        let stripped = scratch.file("stripped")
        try runChecked("strip", ["--strip-all", "-o", stripped, fixture.unstripped])
        let plain = try DebugFile(path: stripped)
        let namedWithout = addresses.filter { plain.frames(at: $0).last?.symbol != nil }.count
        // The recipe keeps T/t symbols only: C++'s weak inline and template functions (W) stay
        // unnamed, for eu-addr2line too (cpp-clang: about half its instructions).
        #expect(named > namedWithout && named > addresses.count / 3, "\(name): \(named) named with MiniDebugInfo, \(namedWithout) without")
        print("[minidebuginfo] \(name): \(addresses.count) instructions, \(named) named (\(namedWithout) by .dynsym alone), \(differing) differ")
    }

    @Test func damagedXzIsNamed() throws {
        let scratch = try TempDirectory("stackline-minidebuginfo")
        defer { scratch.remove() }
        let mini = try Self.make(try sharedElfFixtures.get().named("c-gcc-pie").unstripped, in: scratch)
        let line = try #require(try runChecked("readelf", ["-SW", mini]).stdout.split(separator: "\n").first { $0.contains(".gnu_debugdata") })
        let c = line[line.index(after: line.firstIndex(of: "]")!)...].split(separator: " ")
        let offset = try #require(Int(c[3], radix: 16)), size = try #require(Int(c[4], radix: 16))
        var bytes = try Data(contentsOf: URL(fileURLWithPath: mini))
        for i in offset + size / 2..<offset + size - 16 { bytes[i] ^= 0x5a }
        let damaged = scratch.file("damaged")
        try bytes.write(to: URL(fileURLWithPath: damaged))
        try bytes[offset..<offset + size].write(to: URL(fileURLWithPath: scratch.file("payload.xz")))
        #expect(!(try runProcess("xz", ["-t", scratch.file("payload.xz")])).succeeded, "xz -t accepts the damage: it proves nothing")
        let error = try #require(throws: ElfError.self) { try DebugFile(path: damaged) }
        #expect(error.description.contains("section .gnu_debugdata (MiniDebugInfo): "), "\(error)")
    }
}
