import DebugInfo
import Foundation
import TestSupport
import Testing

/// Debug sections compressed by binutils' objcopy (zstd, which Debian 12's libelf cannot
/// inflate, and zlib) answer exactly as the uncompressed file does at every `.text`
/// instruction, and a file that cannot be read says why: the damage, the method, the size.
@Suite struct CompressedSectionTests {
    let fixtures: ElfFixtureSet
    init() throws { fixtures = try sharedElfFixtures.get() }

    @Test("every .text instruction answers as in the uncompressed file", arguments: ["c-gcc-pie", "cpp-clang", "swift-O"], ["zstd", "zlib"])
    func compressedAnswersAsUncompressed(name: String, method: String) throws {
        let fixture = try fixtures.named(name)
        let scratch = try TempDirectory("stackline-compressed")
        defer { scratch.remove() }
        let compressed = try CompressedELF.make(fixture.unstripped, method: method, in: scratch)
        // objcopy really wrote the method asked for (ch_type 2 is ELFCOMPRESS_ZSTD, 1 zlib).
        let info = try CompressedELF.section(".debug_info", of: compressed)
        #expect(info.flags.contains("C"), "objcopy left .debug_info uncompressed")
        #expect(try CompressedELF.chType(compressed, info) == (method == "zstd" ? 2 : 1))

        let plain = try DebugFile(path: fixture.unstripped)
        let packed = try DebugFile(path: compressed)
        #expect(packed.elf.hasDWARF && packed.elf.dwarfAbsence == nil)
        #expect(packed.unitCount == plain.unitCount && packed.unitCount > 0)
        let addresses = try instructionAddresses(in: fixture.unstripped)
        var differing = 0, answered = 0
        for a in addresses {
            let expected = plain.frames(at: a)
            if expected.contains(where: { $0.file != nil }) { answered += 1 }
            if packed.frames(at: a) != expected {
                differing += 1
                if differing <= 5 { Issue.record("\(name) \(method) at 0x\(String(a, radix: 16)): \(packed.frames(at: a)) vs \(expected)") }
            }
        }
        #expect(differing == 0, "\(name) \(method): \(differing) of \(addresses.count) instructions differ")
        // The comparison covered real line answers, not only "??".
        #expect(answered > addresses.count / 10, "\(name): only \(answered) of \(addresses.count) addresses had a line")
        print("[compressed] \(name) \(method): \(addresses.count) instructions, \(answered) with a line, \(differing) differ")
    }

    /// Damage made here, at a place the test chose; `zstd -d` (the reference decoder) is the
    /// oracle that the bytes are corrupt.
    @Test func corruptZstdDataIsNamedWithItsSection() throws {
        let scratch = try TempDirectory("stackline-compressed")
        defer { scratch.remove() }
        let file = try CompressedELF.make(try fixtures.named("c-gcc-pie").unstripped, method: "zstd", in: scratch)
        let info = try CompressedELF.section(".debug_info", of: file)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        let payload = Int(info.offset) + 24..<Int(info.offset + info.size)
        for i in payload.lowerBound + payload.count / 2..<payload.upperBound { bytes[i] = 0xff }
        let damaged = scratch.file("damaged")
        try bytes.write(to: URL(fileURLWithPath: damaged))
        try bytes[payload].write(to: URL(fileURLWithPath: scratch.file("payload.zst")))
        let reference = try runProcess("/usr/bin/zstd", ["-d", "-c", scratch.file("payload.zst")])
        #expect(!reference.succeeded, "zstd -d decoded the damaged payload: the damage proves nothing")

        let error = try #require(throws: ElfError.self) { try ElfFile(path: damaged) }
        let message = error.description
        #expect(message.contains("section .debug_info: zstd data corrupt at byte "), "\(message)")
        #expect(message.contains(" of \(payload.count): "), "\(message)")
        #expect(!message.contains("DWARF unreadable"), "\(message)")
        // The position is inside the damaged half, where the decoder stopped.
        let at = message.components(separatedBy: "corrupt at byte ").last.flatMap { Int($0.prefix { $0.isNumber }) }
        #expect(at.map { $0 >= payload.count / 2 && $0 <= payload.count } == true, "\(message)")
    }

    @Test func headerSizeOtherThanTheDataIsRefusedWithBothSizes() throws {
        let scratch = try TempDirectory("stackline-compressed")
        defer { scratch.remove() }
        let file = try CompressedELF.make(try fixtures.named("c-gcc-pie").unstripped, method: "zstd", in: scratch)
        let info = try CompressedELF.section(".debug_info", of: file)
        let declared = try CompressedELF.chSize(file, info)
        let larger = try CompressedELF.patch(file, at: Int(info.offset) + 8, UInt64(declared + 1), in: scratch)
        let error = try #require(throws: ElfError.self) { try ElfFile(path: larger) }
        #expect(error.description.hasSuffix("section .debug_info: zstd data decompresses to \(declared) bytes, where \(declared + 1) were declared"), "\(error)")
        let smaller = try CompressedELF.patch(file, at: Int(info.offset) + 8, UInt64(declared - 1), in: scratch)
        let error2 = try #require(throws: ElfError.self) { try ElfFile(path: smaller) }
        #expect(error2.description.hasSuffix("zstd data decompresses to more than \(declared - 1) bytes, where \(declared - 1) were declared"), "\(error2)")
    }

    @Test func unknownMethodAndBombSizesAreNamed() throws {
        let scratch = try TempDirectory("stackline-compressed")
        defer { scratch.remove() }
        let file = try CompressedELF.make(try fixtures.named("c-gcc-pie").unstripped, method: "zstd", in: scratch)
        let info = try CompressedELF.section(".debug_info", of: file)
        let unknown = try CompressedELF.patch(file, at: Int(info.offset), UInt32(7), in: scratch)
        let e1 = try #require(throws: ElfError.self) { try ElfFile(path: unknown) }
        guard case .unsupported = e1 else { Issue.record("not .unsupported: \(e1)"); return }
        #expect(e1.description.contains("section .debug_info is compressed with method 7"), "\(e1)")
        #expect(e1.description.contains("which this build cannot read") && !e1.description.contains("corrupt"), "\(e1)")
        // 1 TiB from a section of a few KB: refused before anything is allocated.
        let bomb = try CompressedELF.patch(file, at: Int(info.offset) + 8, UInt64(1) << 40, in: scratch)
        let e2 = try #require(throws: ElfError.self) { try ElfFile(path: bomb) }
        guard case .tooLarge = e2 else { Issue.record("not .tooLarge: \(e2)"); return }
        #expect(e2.description.contains("section .debug_info declares 1099511627776 bytes once inflated from \(info.size)"), "\(e2)")
    }

    /// A file without DWARF is no error, and says which kind of absence it is.
    @Test func missingDWARFSaysWhy() throws {
        let stripped = try #require(try fixtures.named("c-gcc-nopie").stripped)
        let elf = try ElfFile(path: stripped)
        #expect(!elf.hasDWARF && elf.dwarfAbsence == "no .debug_info section (stripped, or built without -g)")

        // .debug_info turned into SHT_NOBITS in its section header (type word at +4).
        let scratch = try TempDirectory("stackline-compressed")
        defer { scratch.remove() }
        let source = try fixtures.named("c-gcc-pie").unstripped
        let header = try runChecked("readelf", ["-hW", source]).stdout
        let shoff = try #require(header.split(separator: "\n").first { $0.contains("Start of section headers") }
            .flatMap { $0.split(separator: ":")[1].split(separator: " ").first.flatMap { Int($0) } })
        let index = try CompressedELF.section(".debug_info", of: source).index
        let nobits = try CompressedELF.patch(source, at: shoff + index * 64 + 4, UInt32(8), in: scratch)
        let patched = try ElfFile(path: nobits)
        #expect(!patched.hasDWARF)
        #expect(patched.dwarfAbsence?.contains("SHT_NOBITS") == true, "\(patched.dwarfAbsence ?? "nil")")
    }
}

/// ELF files recompressed by binutils' objcopy, and their section headers as `readelf -SW` lists them.
enum CompressedELF {
    struct Section {
        var index: Int
        var offset: UInt64
        var size: UInt64
        var flags: String
    }

    static func make(_ source: String, method: String, in scratch: TempDirectory) throws -> String {
        let out = scratch.file((source as NSString).lastPathComponent + "." + method)
        try runChecked("objcopy", ["--compress-debug-sections=\(method)", source, out])
        return out
    }

    static func section(_ name: String, of file: String) throws -> Section {
        for line in try runChecked("readelf", ["-SW", file]).stdout.split(separator: "\n") {
            guard let open = line.firstIndex(of: "["), let close = line.firstIndex(of: "]"),
                let index = Int(line[line.index(after: open)..<close].trimmingCharacters(in: .whitespaces))
            else { continue }
            let c = line[line.index(after: close)...].split(separator: " ")
            guard c.count >= 7, c[0] == name, let off = UInt64(c[3], radix: 16), let size = UInt64(c[4], radix: 16) else { continue }
            // Flags sit between the entry size and the link; absent flags leave a number there.
            let flags = c[6].allSatisfy(\.isNumber) ? "" : String(c[6])
            return Section(index: index, offset: off, size: size, flags: flags)
        }
        throw TestSupportError("readelf lists no section \(name) in \(file)")
    }

    /// `Elf64_Chdr.ch_type`, the first word of the section's bytes.
    static func chType(_ file: String, _ s: Section) throws -> UInt32 {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        return data[Int(s.offset)..<Int(s.offset) + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// `Elf64_Chdr.ch_size`, at offset 8.
    static func chSize(_ file: String, _ s: Section) throws -> Int {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        return data[Int(s.offset) + 8..<Int(s.offset) + 16].reversed().reduce(0) { $0 << 8 | Int($1) }
    }

    /// A copy of `file` with `value` written little-endian at `offset`.
    static func patch<T: FixedWidthInteger>(_ file: String, at offset: Int, _ value: T, in scratch: TempDirectory) throws -> String {
        var data = try Data(contentsOf: URL(fileURLWithPath: file))
        withUnsafeBytes(of: value.littleEndian) { data.replaceSubrange(offset..<offset + MemoryLayout<T>.size, with: $0) }
        let out = scratch.file("patched-\(offset)-\(value)")
        try data.write(to: URL(fileURLWithPath: out))
        return out
    }
}
