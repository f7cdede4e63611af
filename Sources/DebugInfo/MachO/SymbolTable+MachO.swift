extension SymbolTable {
    /// The defined (`N_SECT`) symbols of a Mach-O `LC_SYMTAB`, named and sized as
    /// llvm-symbolizer does, so the two agree on outermost names and symbol-table answers:
    /// one leading underscore is dropped (`_main` is `main`, `__Z…` is `_Z…`, `_$s…` is `$s…`),
    /// and a symbol extends to the next symbol address or the end of its section. Debugging
    /// (stab) entries take part in that sizing, as they do in llvm's, but are not symbols.
    init(machO slice: MachOSlice, file: ByteReader) {
        guard let symtab = slice.symtab, let r = file.slice(slice.offset, slice.size) else {
            self.init(symbols: [])
            return
        }
        struct Entry {
            var address: UInt64
            var section: Int
            var name: String?  // nil: takes part in sizing only
        }
        var entries: [Entry] = []
        entries.reserveCapacity(Int(symtab.symbolCount) + slice.sections.count)
        let stringsEnd = Int(symtab.stringOffset + symtab.stringSize)
        for i in 0..<Int(symtab.symbolCount) {
            let at = Int(symtab.symbolOffset) + i * 16
            guard let strx = r.u32(at), let type = r.u8(at + 4), let sect = r.u8(at + 5), let value = r.u64(at + 8)
            else { break }
            guard sect != 0 else { continue }  // NO_SECT: undefined, absolute
            var name: String?
            let isStab = type & 0xe0 != 0
            if !isStab && type & 0x0e == 0x0e,  // N_SECT
                var text = r.cString(Int(symtab.stringOffset) + Int(strx), limit: stringsEnd), !text.isEmpty
            {
                if text.hasPrefix("_") { text.removeFirst() }
                name = text
            }
            entries.append(Entry(address: value, section: Int(sect), name: name))
        }
        // Section ends bound the last symbol of each section.
        for section in slice.sections {
            entries.append(Entry(address: section.address &+ section.size, section: section.number, name: nil))
        }
        entries.sort { ($0.section, $0.address) < ($1.section, $1.address) }
        var symbols: [ElfSymbol] = []
        var i = 0
        while i < entries.count {
            var next = i + 1
            while next < entries.count && entries[next].address == entries[i].address { next += 1 }
            let size = next < entries.count && entries[next].address > entries[i].address
                ? entries[next].address - entries[i].address : 0
            for e in entries[i..<next] {
                if let name = e.name { symbols.append(ElfSymbol(name: name, address: e.address, size: size)) }
            }
            i = next
        }
        // llvm keeps the last of (address, size, name) among symbols at one address; sizes
        // are equal there, so name order decides, and SymbolTable keeps the last one given.
        symbols.sort { ($0.address, $0.name) < ($1.address, $1.name) }
        self.init(symbols: symbols)
    }
}
