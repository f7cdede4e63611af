import Foundation
import Testing
import TestSupport

/// Corrupt Mach-O files given to the real `stackline symbols add`: each is refused with a
/// one-line reason and a non-zero exit status, and the store is left exactly as it was.
@Suite("Corrupt Mach-O files are refused at symbols add")
struct MachOCorruptFileTests {
    enum Corruption: String, CaseIterable, Sendable, CustomStringConvertible {
        case truncatedLoadCommands = "a thin file cut off inside its load commands"
        case sectionPastEnd = "a __debug_info section offset past the end of the file"
        case absurdCommandCount = "ncmds 0xffffffff"
        case missingUUID = "no LC_UUID"
        case truncatedFatHeader = "a fat header listing two slices, cut off after 12 bytes"
        case oneBadSliceOfTwo = "a fat file whose second slice has an absurd ncmds"
        var description: String { rawValue }
    }

    func putLittleEndian(_ value: UInt32, at offset: Int, in data: inout Data) {
        withUnsafeBytes(of: value.littleEndian) { data.replaceSubrange(offset..<offset + 4, with: $0) }
    }

    func bigEndian(_ data: Data, at offset: Int) -> Int {
        data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
    }

    /// The corrupt bytes and the words the refusal must contain.
    func corrupt(_ c: Corruption) throws -> (bytes: Data, reason: String) {
        let thin = try Data(contentsOf: URL(fileURLWithPath: MachOFixtures.dylibDWARF))
        let fat = try Data(contentsOf: URL(fileURLWithPath: MachOFixtures.dSYMDWARF))
        var bytes = thin
        switch c {
        case .truncatedLoadCommands:
            // mach_header_64 is 32 bytes; sizeofcmds is its sixth field.
            let sizeofcmds = Int(thin[20]) | Int(thin[21]) << 8 | Int(thin[22]) << 16
            return (thin.prefix(32 + sizeofcmds / 2), "load commands end at")
        case .sectionPastEnd:
            // section_64: sectname[16], segname[16], addr, size, then the 32-bit file offset.
            let header = Data("__debug_info\0\0\0\0__DWARF".utf8)
            let at = try #require(thin.range(of: header)?.lowerBound, "no __debug_info section header")
            putLittleEndian(UInt32(thin.count + 4096), at: at + 48, in: &bytes)
            return (bytes, "section __DWARF,__debug_info ends at")
        case .absurdCommandCount:
            putLittleEndian(0xffff_ffff, at: 16, in: &bytes)
            return (bytes, "claims 4294967295 load commands")
        case .missingUUID:
            // LC_UUID is cmd, cmdsize, then the UUID llvm-dwarfdump prints: turn it into an unknown command.
            let uuid = try #require(try MachOFixtures.uuids(MachOFixtures.dylibDWARF)["arm64"])
            let raw = Data(stride(from: 0, to: 32, by: 2).map {
                UInt8(uuid[uuid.index(uuid.startIndex, offsetBy: $0)...].prefix(2), radix: 16)!
            })
            let at = try #require(thin.range(of: raw)?.lowerBound, "UUID bytes not found")
            putLittleEndian(0x7fff_0001, at: at - 8, in: &bytes)
            return (bytes, "has no LC_UUID")
        case .truncatedFatHeader:
            return (fat.prefix(12), "fat header lists 2 architectures")
        case .oneBadSliceOfTwo:
            // fat_arch entries follow the 8-byte fat header, 20 bytes each; offset is the third field.
            bytes = fat
            let second = bigEndian(fat, at: 8 + 20 + 8)
            putLittleEndian(0xffff_ffff, at: second + 16, in: &bytes)
            return (bytes, "fat slice 1 (arm64) claims 4294967295 load commands")
        }
    }

    @Test(arguments: Corruption.allCases)
    func refused(_ corruption: Corruption) throws {
        let scratch = try TempDirectory("stackline-macho-corrupt")
        defer { scratch.remove() }
        let store = scratch.file("store")
        // Seeded with the good files, so "nothing stored" also means "nothing replaced".
        let seeded = try runStackline(["symbols", "add", "--symbols", store, MachOFixtures.dylibDSYM])
        try #require(seeded.succeeded, "seeding the store failed: \(seeded.summary)")
        let before = directorySnapshot(store)

        let (bytes, reason) = try corrupt(corruption)
        let path = scratch.file("corrupt")
        try bytes.write(to: URL(fileURLWithPath: path))
        let result = try runStackline(["symbols", "add", "--symbols", store, path])

        #expect(!result.signaled, "stackline died of signal \(result.status): \(result.stderr)")
        #expect(result.status != 0, "\(corruption) was accepted: \(result.stdout)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "expected one line of reason, got: \(result.stderr)")
        #expect(result.stderr.contains("refused") && result.stderr.contains(reason), "reason should say \"\(reason)\": \(result.stderr)")
        #expect(directorySnapshot(store) == before, "the store changed")
    }
}
