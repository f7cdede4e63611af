import Foundation
import ReportFormats
import ReportModel
import Testing

/// The core-file reader on the hand-laid core of the fuzz seeds (written by the generator that
/// lays out the ELF header, a PT_NOTE with NT_PRSTATUS, NT_SIGINFO and NT_FILE, the module's
/// first page with its build-id note, and a stack): the values the generator wrote, and each
/// lie refused by name. Real cores are checked end to end in CoreFileEndToEndTests.
@Suite struct ElfCoreFormatTests {
    static func seed() throws -> [UInt8] {
        [UInt8](try wildSample("../fuzz-seeds/elf-core/hand-laid-x86-64.core"))
    }

    func refusal(_ bytes: [UInt8]) -> String? {
        do {
            _ = try ElfCoreFormat().parse(Data(bytes))
            return nil
        } catch {
            return error.description
        }
    }

    @Test func theHandLaidCoreReadsBack() throws {
        let data = Data(try Self.seed())
        #expect(FormatRegistry.standard.detect(data)?.id == "elf-core")
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.images.map(\.path) == ["/opt/app/bin/demo"])
        #expect(report.images.first?.id?.hex == (0xa0..<0xb4).map { String(format: "%02x", $0) }.joined())
        #expect(report.images.first?.loadAddress.value == 0x5555_5555_4000 && report.images.first?.size == 0x5000)
        #expect(report.threads.map(\.name) == ["thread 4242"])
        #expect(report.threads.first?.crashed == true)
        #expect(report.threads.first?.frames.map(\.address.value) == [0x5555_5555_51c0])
        #expect(report.exception?.signal == "SIGSEGV")
        let native = try #require(report.native)
        #expect(native.threads.first?.registers[7] == 0x7fff_fffd_e000, "rsp is DWARF register 7")
        #expect(native.word(at: 0x7fff_fffd_e000) == 0x5555_5555_51d5)
    }

    @Test func liesAreRefusedByName() throws {
        let seed = try Self.seed()
        // e_phnum (at 56) as PN_XNUM.
        var xnum = seed
        xnum[56] = 0xff; xnum[57] = 0xff
        #expect(refusal(xnum)?.contains("PN_XNUM") == true)
        // The first program header's p_filesz (at 64 + 32) far past the file.
        var long = seed
        for i in 0..<8 { long[64 + 32 + i] = i == 4 ? 0x01 : 0 }
        #expect(refusal(long)?.contains("run past the end") == true, "\(refusal(long) ?? "")")
        // The first note's descriptor size (at the note segment's start + 4) past its segment.
        let noteOffset = Int(seed[64 + 8]) | Int(seed[64 + 9]) << 8
        var note = seed
        note[noteOffset + 4] = 0xff; note[noteOffset + 5] = 0xff; note[noteOffset + 6] = 0xff
        #expect(refusal(note)?.contains("run past the end") == true, "\(refusal(note) ?? "")")
        // Another machine.
        var machine = seed
        machine[18] = 3
        #expect(refusal(machine)?.contains("machine 3") == true)
        // Every prefix is refused with a reason or read; none traps.
        for length in stride(from: 0, to: seed.count, by: 5) { _ = refusal(Array(seed.prefix(length))) }
    }
}
