import ReportModel

/// The ELF header that presents a Mach-O slice to libelf and libdw.
///
/// libdw reads only ELF. The header describes one section per `__DWARF,__debug_*` section,
/// renamed to its ELF name, whose offsets point at the section's bytes in the mapped
/// Mach-O file that follows the header in memory (see `MappedFile`); nothing is copied.
/// A `.text` section without bytes carries `__TEXT,__text`'s range, so `DebugFile` finds
/// the lowest code address exactly as it does for an ELF file.
enum MachOElfImage {
    /// `__debug_info` is `.debug_info`; Mach-O section names stop at 16 characters, so
    /// `__debug_str_offs` is `.debug_str_offsets`.
    static func elfName(_ machOName: String) -> String? {
        guard machOName.hasPrefix("__debug_") else { return nil }
        if machOName == "__debug_str_offs" { return ".debug_str_offsets" }
        return "." + machOName.dropFirst(2)
    }

    /// The header's length, which does not depend on `fileStart`: sizes the headroom before the file is mapped.
    static func headerSize(for slice: MachOSlice) -> Int {
        header(for: slice, fileStart: 0).count
    }

    /// The ELF header, section headers and section-name table, to be placed at offset 0 of a
    /// region whose byte `fileStart` is the first byte of the Mach-O file.
    static func header(for slice: MachOSlice, fileStart: Int) -> [UInt8] {
        struct Section {
            var name: String
            var type: UInt32
            var flags: UInt64
            var address: UInt64
            var offset: UInt64
            var size: UInt64
        }
        var sections: [Section] = []
        if let text = slice.textSection {
            sections.append(Section(name: ".text", type: 8, flags: 0x6, address: text.address, offset: UInt64(fileStart), size: text.size))  // SHT_NOBITS, SHF_ALLOC|SHF_EXECINSTR
        }
        for s in slice.dwarfSections {
            guard let name = elfName(s.name), !sections.contains(where: { $0.name == name }) else { continue }
            sections.append(Section(
                name: name, type: 1, flags: 0, address: 0,  // SHT_PROGBITS
                offset: UInt64(fileStart) + slice.offset + s.offset, size: s.size))
        }
        var strings: [UInt8] = [0]
        var nameOffsets: [UInt32] = []
        for s in sections {
            nameOffsets.append(UInt32(strings.count))
            strings += Array(s.name.utf8) + [0]
        }
        let shstrtabName = UInt32(strings.count)
        strings += Array(".shstrtab".utf8) + [0]

        let stringsOffset = 64
        let headersOffset = (stringsOffset + strings.count + 7) & ~7
        let count = sections.count + 2  // null, sections, .shstrtab
        var out = [UInt8](repeating: 0, count: headersOffset + count * 64)

        func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
            withUnsafeBytes(of: value.littleEndian) { out.replaceSubrange(offset..<offset + MemoryLayout<T>.size, with: $0) }
        }
        out.replaceSubrange(0..<7, with: [0x7f, 0x45, 0x4c, 0x46, 2, 1, 1])  // ELFCLASS64, ELFDATA2LSB, EV_CURRENT
        put(UInt16(2), at: 16)  // ET_EXEC: addresses are final, nothing to relocate
        put(slice.arch.elfMachine ?? 0, at: 18)  // EM_NONE for an architecture the table lacks
        put(UInt32(1), at: 20)
        put(UInt64(headersOffset), at: 40)  // e_shoff
        put(UInt16(64), at: 52)  // e_ehsize
        put(UInt16(56), at: 54)  // e_phentsize
        put(UInt16(64), at: 58)  // e_shentsize
        put(UInt16(count), at: 60)
        put(UInt16(count - 1), at: 62)  // e_shstrndx
        out.replaceSubrange(stringsOffset..<stringsOffset + strings.count, with: strings)

        func header(_ index: Int, name: UInt32, type: UInt32, flags: UInt64, address: UInt64, offset: UInt64, size: UInt64) {
            let h = headersOffset + index * 64
            put(name, at: h)
            put(type, at: h + 4)
            put(flags, at: h + 8)
            put(address, at: h + 16)
            put(offset, at: h + 24)
            put(size, at: h + 32)
            put(UInt64(1), at: h + 48)  // sh_addralign
        }
        for (i, s) in sections.enumerated() {
            header(i + 1, name: nameOffsets[i], type: s.type, flags: s.flags, address: s.address, offset: s.offset, size: s.size)
        }
        header(count - 1, name: shstrtabName, type: 3, flags: 0, address: 0, offset: UInt64(stringsOffset), size: UInt64(strings.count))  // SHT_STRTAB
        return out
    }
}
