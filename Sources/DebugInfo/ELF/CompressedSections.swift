import CElfUtils
import Compression

/// The `SHF_COMPRESSED` sections of an open ELF file, inflated by Stackline rather than by
/// libelf: Debian 12's libelf (elfutils 0.188) cannot inflate `ELFCOMPRESS_ZSTD`, and libdw then
/// skips the section as if the file had no DWARF. zlib sections take the same path, so both
/// methods share one set of bounds and one set of messages.
///
/// Each inflated buffer replaces its section's data in libelf (`Elf_Data.d_buf`, which libelf
/// leaves to its owner to free), and `SHF_COMPRESSED` is cleared in the in-memory section
/// header, so libdw takes the section as it would an uncompressed one. The file is not changed.
struct CompressedSections {
    /// The most one section may inflate to, and all of a file's sections together: a debug
    /// file is held inflated in a worker's memory while it is open.
    static let maxTotalSize: UInt64 = 4 << 30
    /// deflate's own ceiling (runs of one byte), which libelf also holds zlib sections to.
    /// zstd can exceed it only on degenerate input; DWARF compresses 3- to 10-fold.
    static let maxRatio: UInt64 = 1032
    /// What a section may inflate to whatever its ratio: a small section's ratio says little.
    static let ratioFloor: UInt64 = 1 << 20

    /// The buffers handed to libelf; freed by `release` after `elf_end`.
    private(set) var buffers: [UnsafeMutableRawBufferPointer] = []

    /// Whether Stackline reads `section`: only those are inflated (and refuse the file when they
    /// cannot be); any other compressed section is left as it is, as libdw leaves it.
    private static func isRead(_ section: ElfSection) -> Bool {
        section.name.hasPrefix(".debug_") || section.type == UInt32(SHT_SYMTAB) || section.name == ".strtab"
    }

    /// Inflates every compressed section of `elf` that Stackline reads. On error, what was
    /// inflated so far is released before throwing.
    static func inflate(_ elf: OpaquePointer, sections: [ElfSection], is64Bit: Bool, fileSize: UInt64, path: String) throws(ElfError) -> CompressedSections {
        var inflated = CompressedSections()
        var total: UInt64 = 0
        // Sections may overlap in the file (nothing forbids it), each inflating the same bytes:
        // the ratio holds for the sum as well as for each one.
        let (byFile, fileOverflow) = fileSize.multipliedReportingOverflow(by: maxRatio)
        let totalCap = min(maxTotalSize, max(ratioFloor, fileOverflow ? UInt64.max : byFile))
        for section in sections where section.isCompressed && section.hasFileContents && isRead(section) {
            do throws(ElfError) {
                guard let scn = elf_getscn(elf, section.index) else { throw ElfError.corrupt(path: path, detail: "section \(section.name) vanished") }
                var header = GElf_Chdr()
                guard gelf_getchdr(scn, &header) != nil else {
                    throw ElfError.corrupt(path: path, detail: "section \(section.name): unreadable compression header (\(ElfFile.elfMessage()))")
                }
                guard let method = SectionCompression(rawValue: header.ch_type) else {
                    throw ElfError.unsupported(
                        path: path,
                        detail: "section \(section.name) is compressed with method \(header.ch_type) (ELF defines 1, zlib, and 2, zstd), which this build cannot read")
                }
                // The header's size is input: bounded before anything is allocated for it.
                let (byRatio, overflow) = section.size.multipliedReportingOverflow(by: maxRatio)
                let ratioCap = max(ratioFloor, overflow ? UInt64.max : byRatio)
                if header.ch_size > ratioCap {
                    throw ElfError.tooLarge(
                        path: path,
                        detail: "section \(section.name) declares \(header.ch_size) bytes once inflated from \(section.size), more than \(maxRatio)-fold")
                }
                let (sum, sumOverflow) = total.addingReportingOverflow(header.ch_size)
                if sumOverflow || sum > totalCap {
                    let most = totalCap == maxTotalSize ? "\(maxTotalSize >> 30) GiB, the most Stackline reads" : "\(totalCap) bytes, \(maxRatio) times the file"
                    throw ElfError.tooLarge(
                        path: path, detail: "compressed sections inflate to more than \(most) (at section \(section.name))")
                }
                total = sum
                try inflated.inflate(scn, section, header: header, method: method, is64Bit: is64Bit, path: path)
            } catch {
                inflated.release()
                throw error
            }
        }
        return inflated
    }

    private mutating func inflate(_ scn: OpaquePointer, _ section: ElfSection, header: GElf_Chdr, method: SectionCompression, is64Bit: Bool, path: String) throws(ElfError) {
        guard let data = elf_getdata(scn, nil), let raw = data.pointee.d_buf else {
            throw .corrupt(path: path, detail: "section \(section.name): unreadable contents (\(ElfFile.elfMessage()))")
        }
        let headerSize = is64Bit ? MemoryLayout<Elf64_Chdr>.size : MemoryLayout<Elf32_Chdr>.size
        guard data.pointee.d_size >= headerSize else {
            throw .truncated(path: path, detail: "section \(section.name) is shorter than its compression header")
        }
        let payload = UnsafeRawBufferPointer(start: raw + headerSize, count: data.pointee.d_size - headerSize)
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(header.ch_size), alignment: 16)
        do {
            try method.decompress(payload, exactlyInto: output)
        } catch {
            output.deallocate()
            throw .corrupt(path: path, detail: "section \(section.name): \(method) data \(Self.describe(error))")
        }
        buffers.append(output)
        data.pointee.d_buf = output.baseAddress
        data.pointee.d_size = output.count
        data.pointee.d_type = ELF_T_BYTE
        var shdr = GElf_Shdr()
        guard gelf_getshdr(scn, &shdr) != nil else {
            throw .corrupt(path: path, detail: "unreadable section header (\(ElfFile.elfMessage()))")
        }
        shdr.sh_flags &= ~UInt64(SHF_COMPRESSED)
        shdr.sh_size = header.ch_size
        shdr.sh_addralign = header.ch_addralign
        guard gelf_update_shdr(scn, &shdr) != 0 else {
            throw .corrupt(path: path, detail: "section \(section.name): header not updated (\(ElfFile.elfMessage()))")
        }
    }

    private static func describe(_ error: CompressionError) -> String {
        switch error {
        case .corrupt(let why): "corrupt: \(why)"
        case .truncated: "truncated: the input ends inside a frame"
        default: error.description
        }
    }

    func release() {
        for buffer in buffers { buffer.deallocate() }
    }
}
