import DebugInfo
import Foundation
import ReportModel
import TestSupport
import Testing

@Suite struct MachOFileTests {
    /// Slices, UUIDs and `__TEXT.vmaddr` as llvm-dwarfdump and llvm-objdump read them.
    @Test(arguments: [MachOFixtures.executable, MachOFixtures.dSYMDWARF, MachOFixtures.dylibDWARF])
    func slicesMatchLLVMTools(path: String) throws {
        let file = try MachOFile(path: path)
        let uuids = try MachOFixtures.uuids(path)
        #expect(Dictionary(uniqueKeysWithValues: file.slices.map { ($0.arch.name, $0.uuid.hex) }) == uuids)
        #expect(file.isFat == (uuids.count > 1))
        for slice in file.slices {
            let debug = try DebugFile(machO: path, arch: slice.arch)
            #expect(debug.preferredBase == (try MachOFixtures.textVMAddress(path, arch: slice.arch.name)))
            #expect(debug.machO?.uuid == slice.uuid && debug.architecture == slice.arch)
            #expect(debug.elf.hasDWARF == (path != MachOFixtures.executable), "\(path) \(slice.arch)")
            #expect(debug.symbolCount > 0)
        }
    }

    @Test func aFatFileNeedsAnArchAndNamesItsSlices() throws {
        do {
            _ = try DebugFile(machO: MachOFixtures.dSYMDWARF)
            Issue.record("a fat file opened without --arch")
        } catch {
            #expect(error.description.contains("arm64") && error.description.contains("x86_64"), "\(error)")
        }
        #expect(throws: MachOError.self) { try DebugFile(machO: MachOFixtures.dSYMDWARF, arch: "armv7") }
    }

    /// Every prefix length (in steps) and deterministic byte flips in the headers and load
    /// commands: each either opens or is refused with a MachOError. A crash fails the run.
    @Test func damagedFilesNeverCrash() throws {
        let original = try Data(contentsOf: URL(fileURLWithPath: MachOFixtures.dSYMDWARF))
        let scratch = try TempDirectory("stackline-macho-damage")
        defer { scratch.remove() }
        let path = scratch.file("damaged")
        var state: UInt64 = 0x9e37_79b9_7f4a_7c15
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33)
        }
        var inputs: [Data] = stride(from: 0, to: original.count, by: 97).map { original.prefix($0) }
        for _ in 0..<300 {
            var bytes = original
            // The fat header, both slice headers and their load commands live in the first pages.
            for _ in 0..<(1 + next() % 4) {
                bytes[next() % min(bytes.count, 8192)] = UInt8(truncatingIfNeeded: next())
            }
            inputs.append(bytes)
        }
        var refused = 0
        for bytes in inputs {
            try bytes.write(to: URL(fileURLWithPath: path))
            for arch in ["arm64", "x86_64"] {
                do {
                    let file = try DebugFile(machO: path, arch: Arch(arch))
                    _ = file.frames(at: 0x1_0000_4010)
                } catch {
                    refused += 1
                    #expect(!error.description.contains("\n"))
                }
            }
        }
        #expect(refused > inputs.count, "damage was hardly ever noticed: \(refused) refusals")
    }
}
