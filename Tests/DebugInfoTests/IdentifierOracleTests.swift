import DebugInfo
import Foundation
import ReportModel
import TestSupport
import Testing

/// The ids and architectures the readers give the fixture binaries, against what LLVM's and
/// binutils' tools print for them, fed to `BuildID` and `Arch` in the tools' own spelling.
@Suite struct IdentifierOracleTests {
    /// llvm-dwarfdump prints `UUID: 4C4C446A-5555-3144-A1E0-F6DE5874C64D (arm64) path`.
    @Test(arguments: [MachOFixtures.executable, MachOFixtures.dSYMDWARF, MachOFixtures.dylibDWARF])
    func machOUUIDsAndArchsMatchLLVMDwarfdump(path: String) throws {
        let out = try runChecked(try findTool(anyOf: ["llvm-dwarfdump-14", "llvm-dwarfdump"]), ["--uuid", path])
        let file = try MachOFile(path: path)
        var seen = 0
        for line in out.stdout.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count >= 3, words[0] == "UUID:" else { continue }
            let id = try BuildID(words[1], lengths: .machO)
            let arch = Arch(String(words[2].dropFirst().dropLast()))
            let slice = try #require(file.slice(uuid: id), "no slice with \(words[1])")
            #expect(slice.uuid == id && slice.uuid.hex == words[1].lowercased().replacingOccurrences(of: "-", with: ""))
            #expect(slice.arch == arch && slice.arch.isKnown)
            #expect(try file.slice(arch: arch).uuid == id)
            seen += 1
        }
        #expect(seen == file.slices.count && seen > 0)
    }

    /// llvm-objdump names the fat header's entries; the slices carry the same names in the same order.
    @Test func fatSliceArchsMatchLLVMObjdump() throws {
        let out = try runChecked(try findTool(anyOf: ["llvm-objdump-14", "llvm-objdump"]), ["--macho", "--universal-headers", MachOFixtures.executable])
        let names = out.stdout.split(separator: "\n").filter { $0.hasPrefix("architecture ") }.map { String($0.dropFirst("architecture ".count)) }
        #expect(try MachOFile(path: MachOFixtures.executable).architectures.map(\.name) == names)
        #expect(names.count == 2)
    }

    /// readelf -n prints `Build ID: 9f1c…`; llvm-objdump -f prints `architecture: x86_64`.
    @Test func elfBuildIDsAndMachinesMatchReadelfAndObjdump() throws {
        let fixtures = try sharedElfFixtures.get()
        let objdump = try findTool(anyOf: ["llvm-objdump-14", "llvm-objdump"])
        var checked = 0
        for fixture in fixtures.fixtures {
            let notes = try runChecked(try findTool("readelf"), ["-n", fixture.unstripped]).stdout
            let elf = try ElfFile(path: fixture.unstripped)
            let readelf = notes.split(separator: "\n").first { $0.contains("Build ID:") }.map { $0.split(separator: " ").last.map(String.init) ?? "" }
            if let readelf {
                #expect(elf.buildID == (try BuildID(readelf, lengths: .gnu)), "\(fixture.name)")
                checked += 1
            } else {
                #expect(elf.buildID == nil, "\(fixture.name) has no build-id note")
            }
            let llvm = try runChecked(objdump, ["-f", fixture.unstripped]).stdout
            let name = try #require(llvm.split(separator: "\n").first { $0.hasPrefix("architecture: ") }?.split(separator: " ")[1])
            #expect(elf.architecture.isSame(as: Arch(String(name).replacingOccurrences(of: ",", with: ""))), "\(fixture.name): \(name)")
        }
        #expect(checked >= 10)
    }
}
