import CElfUtils

/// Address-sorted symbols of one ELF file, answering "which symbol covers this address".
///
/// Selection follows llvm-symbolizer so the two agree on the outermost function name: among
/// symbols at one address the largest wins; a sized symbol covers `[address, address+size)`,
/// a zero-sized one everything up to the next symbol.
public struct SymbolTable: Sendable {
    public let symbols: [ElfSymbol]
    /// `symbols`' addresses and sizes on their own: a lookup's search, and a sweep over every
    /// symbol, read only these, without touching (and retaining) the names (`make bench`,
    /// symcache build).
    public let addresses: [UInt64]
    public let sizes: [UInt64]

    public init(symbols: [ElfSymbol]) {
        // Sorted as plain integers (address, size, index), and each kept symbol copied once: sorting
        // the symbols themselves moved and released their names, a third of opening a large
        // file (`make bench`, symcache build).
        var order = [(address: UInt64, size: UInt64, index: Int)]()
        order.reserveCapacity(symbols.count)
        for (i, s) in symbols.enumerated() { order.append((s.address, s.size, i)) }
        order.sort { ($0.address, $0.size, $0.index) < ($1.address, $1.size, $1.index) }
        var unique: [ElfSymbol] = []
        unique.reserveCapacity(order.count)
        var addresses: [UInt64] = []
        var sizes: [UInt64] = []
        addresses.reserveCapacity(order.count)
        sizes.reserveCapacity(order.count)
        // Among symbols at one address, the last in this order (the largest) wins.
        for (k, key) in order.enumerated() where k + 1 == order.count || order[k + 1].address != key.address {
            unique.append(symbols[key.index])
            addresses.append(key.address)
            sizes.append(key.size)
        }
        self.symbols = unique
        self.addresses = addresses
        self.sizes = sizes
    }

    /// Reads `.symtab`, or `.dynsym` when there is no `.symtab`.
    init(elf file: ElfFile) {
        let symtab = file.sections.filter { $0.type == UInt32(SHT_SYMTAB) }
        let chosen = symtab.isEmpty ? file.sections.filter { $0.type == UInt32(SHT_DYNSYM) } : symtab
        var out: [ElfSymbol] = []
        for section in chosen {
            var currentFile: String?
            guard let scn = elf_getscn(file.elf, section.index),
                let data = elf_getdata(scn, nil), section.entrySize > 0
            else { continue }
            let count = Int(section.size / section.entrySize)
            out.reserveCapacity(out.count + count)
            for i in 0..<count {
                var sym = GElf_Sym()
                guard gelf_getsym(data, Int32(i), &sym) != nil else { continue }
                let type = Int32(sym.st_info & 0xf)
                let binding = Int32(sym.st_info >> 4)
                if type == STT_FILE {
                    currentFile = elf_strptr(file.elf, Int(section.link), Int(sym.st_name)).map { String(cString: $0) }
                    continue
                }
                guard type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_OBJECT || type == STT_NOTYPE
                else { continue }
                let shndx = Int32(sym.st_shndx)
                guard shndx != SHN_UNDEF, shndx != SHN_ABS, shndx < SHN_LORESERVE || shndx == SHN_XINDEX else { continue }
                guard let cName = elf_strptr(file.elf, Int(section.link), Int(sym.st_name)), cName.pointee != 0
                else { continue }
                // ARM/AArch64 mapping symbols ($a, $d, $t, $x, optionally ".suffixed") and local
                // labels name no function. Swift's `$s…` names must survive this filter.
                if Self.isMappingSymbol(cName) || (cName.pointee == UInt8(ascii: ".") && cName[1] == UInt8(ascii: "L")) {
                    continue
                }
                out.append(ElfSymbol(
                    name: String(cString: cName), address: sym.st_value, size: sym.st_size,
                    sourceFile: binding == STB_LOCAL ? currentFile : nil))
            }
        }
        self.init(symbols: out)
    }

    static func isMappingSymbol(_ name: UnsafePointer<CChar>) -> Bool {
        guard name[0] == UInt8(ascii: "$") else { return false }
        switch UInt8(bitPattern: name[1]) {
        case UInt8(ascii: "a"), UInt8(ascii: "d"), UInt8(ascii: "t"), UInt8(ascii: "x"):
            return name[2] == 0 || name[2] == UInt8(ascii: ".")
        default:
            return false
        }
    }

    public var isEmpty: Bool { symbols.isEmpty }

    /// The symbol covering `address`, if any.
    public func symbol(containing address: UInt64) -> ElfSymbol? {
        var hint = -1
        return index(containing: address, hint: &hint).map { symbols[$0] }
    }

    /// The index of the symbol covering `address`. `hint` is the last symbol at or below the
    /// previous address asked: a sweep upwards steps from it instead of searching (the same
    /// answer: addresses are unique, so "the last symbol at or below" has one index).
    func index(containing address: UInt64, hint: inout Int) -> Int? {
        let last = lastIndex(atOrBelow: address, count: addresses.count, hint: hint) { addresses[$0] }
        hint = last
        guard last >= 0 else { return nil }
        if sizes[last] != 0 && address - addresses[last] >= sizes[last] { return nil }
        return last
    }
}
