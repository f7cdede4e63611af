import DebugInfo
import Foundation
import TestSupport
import Testing

@Suite struct ElfFileTests {
    let fixtures: ElfFixtureSet
    init() throws { fixtures = try sharedElfFixtures.get() }

    /// `readelf -n` (binutils) is the oracle for the build-id note.
    @Test func buildIDMatchesReadelf() throws {
        for fixture in fixtures.accuracy {
            let elf = try ElfFile(path: fixture.unstripped)
            #expect(elf.buildID?.hex == (try readelfBuildID(fixture.unstripped)), "\(fixture.name)")
            #expect(try ElfFile(path: fixture.debugFile!).buildID == elf.buildID, "\(fixture.name).debug")
        }
    }

    /// The preferred base is the first PT_LOAD's page, as `readelf -lW` lists it.
    @Test(arguments: ["c-gcc-nopie", "c-gcc-pie", "libc-clang.so"])
    func preferredBaseIsTheFirstLoadSegment(name: String) throws {
        let fixture = try fixtures.named(name)
        let out = try runChecked("readelf", ["-lW", fixture.unstripped])
        let firstLoad = try #require(out.stdout.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("LOAD") })
        let vaddr = try #require(UInt64(firstLoad.split(separator: " ")[2].dropFirst(2), radix: 16))
        #expect(try ElfFile(path: fixture.unstripped).preferredBase == vaddr & ~0xfff)
    }

    @Test func debugOnlyFilesAreRecognised() throws {
        let fixture = try fixtures.named("c-clang-pie")
        #expect(try ElfFile(path: fixture.debugFile!).isDebugOnly)
        #expect(try !ElfFile(path: fixture.unstripped).isDebugOnly)
        #expect(try !ElfFile(path: fixture.stripped!).hasDWARF)
    }

    @Test func corruptFilesAreRefusedWithAReason() throws {
        let scratch = try makeTemporaryDirectory(prefix: "corrupt")
        let originalPath = try fixtures.named("c-gcc-pie").unstripped
        let original = try #require(FileManager.default.contents(atPath: originalPath))

        let truncated = scratch + "/truncated"
        FileManager.default.createFile(atPath: truncated, contents: original.prefix(original.count - 200))
        #expect(throws: ElfError.self) { try ElfFile(path: truncated) }
        do { _ = try ElfFile(path: truncated) } catch { #expect(error.description.contains("truncated"), "\(error)") }

        // A section header table pointing past the end of the file.
        var badOffset = original
        let shoffField = 0x28  // e_shoff in an ELF64 header
        withUnsafeBytes(of: UInt64(original.count * 4).littleEndian) { badOffset.replaceSubrange(shoffField..<shoffField + 8, with: $0) }
        let badPath = scratch + "/bad-shoff"
        FileManager.default.createFile(atPath: badPath, contents: badOffset)
        do {
            _ = try ElfFile(path: badPath)
            Issue.record("a section table past the end of the file was accepted")
        } catch {
            #expect(error.description.contains("section header table"), "\(error)")
        }

        let text = scratch + "/text"
        try "hello\n".write(toFile: text, atomically: true, encoding: .utf8)
        #expect(throws: ElfError.notELF(path: text)) { try ElfFile(path: text) }
    }

    /// The Swift runtime has a symbol table and no DWARF; every answer comes from `.symtab`,
    /// and must name what llvm-symbolizer names.
    @Test func swiftRuntimeResolvesThroughItsSymbolTable() throws {
        let core = "/opt/swift/usr/lib/swift/linux/libswiftCore.so"
        try #require(FileManager.default.fileExists(atPath: core), "the Swift toolchain's libswiftCore.so")
        let file = try DebugFile(path: core)
        #expect(!file.elf.hasDWARF && file.elf.hasSymbolTable)
        let addresses = try instructionAddresses(in: core).enumerated().filter { $0.offset % 997 == 0 }.map(\.element)
        let oracle = try runChecked(
            try findTool(anyOf: ["llvm-symbolizer-14", "llvm-symbolizer"]), ["--obj=\(core)", "-f", "--no-demangle"],
            stdin: addresses.map { "0x" + String($0, radix: 16) }.joined(separator: "\n") + "\n")
        let names = oracle.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            .enumerated().filter { $0.offset % 3 == 0 }.map { String($0.element) }
        var agree = 0
        var misses: [String] = []
        for (address, expected) in zip(addresses, names) {
            let frames = file.frames(at: address)
            if frames.count == 1, frames[0].fromSymbolTableOnly, frames[0].symbol == expected {
                agree += 1
            } else if frames.isEmpty && expected == "??" {
                agree += 1  // neither finds a symbol (padding between functions)
            } else if misses.count < 5 {
                misses.append("0x\(String(address, radix: 16)): \(frames) vs \(expected)")
            }
        }
        #expect(addresses.count > 100)
        #expect(agree == addresses.count, "\(agree)/\(addresses.count) symbol-table answers agree with llvm-symbolizer: \(misses)")
    }
}
