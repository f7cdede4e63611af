extension DebugFile {
    /// Opens one slice of a Mach-O file (thin, fat, or the DWARF file in a dSYM): chosen by
    /// `uuid`, else by `arch`, else the only one. Without DWARF, its `LC_SYMTAB` answers.
    /// `symbolsFrom` is a Mach-O file whose slice with the same UUID supplies symbols when
    /// this one has none.
    public convenience init(machO path: String, arch: String? = nil, uuid: String? = nil, symbolsFrom companion: String? = nil) throws(MachOError) {
        let slice: MachOSlice
        let file = try MachOFile(path: path)
        if let uuid {
            guard let s = file.slice(uuid: uuid) else {
                throw .noSuchArch(path: path, arch: "UUID \(uuid)", available: file.slices.map { "\($0.arch) \($0.uuid)" })
            }
            slice = s
        } else {
            slice = try file.slice(arch: arch)
        }
        let header = MachOElfImage.headerSize(for: slice)
        let image = try MappedFile(path: path, headroom: header)
        // The file was parsed from an earlier mapping: its offsets hold only for the same bytes.
        guard UInt64(image.fileSize) == file.fileSize, let again = try? MachOFile(path: path, bytes: image.contents),
            again.slices == file.slices
        else { throw .unreadable(path: path, reason: "the file changed while it was being opened") }
        let bytes = MachOElfImage.header(for: slice, fileStart: image.headroom)
        image.region.copyBytes(from: bytes)

        var symbols = SymbolTable(machO: slice, file: ByteReader(bytes: image.contents, bigEndian: false))
        if symbols.isEmpty, let companion, let other = try? MachOFile(path: companion),
            let match = other.slice(uuid: slice.uuid), let mapped = try? MappedFile(path: companion)
        {
            symbols = SymbolTable(machO: match, file: ByteReader(bytes: mapped.contents, bigEndian: false))
        }
        do {
            let elf = try ElfFile(image: image, path: path)
            try self.init(elf: elf, symbols: symbols, machO: slice, preferredBase: slice.textVMAddress, architecture: slice.arch)
        } catch {
            throw .corrupt(path: path, detail: "\(slice.arch) DWARF: \(error.description)")
        }
    }

    /// Opens an ELF file or a Mach-O file (see `init(machO:arch:uuid:symbolsFrom:)`), by its magic number.
    public static func open(path: String, arch: String? = nil, uuid: String? = nil, symbolsFrom companion: String? = nil) throws(DebugFileError) -> DebugFile {
        switch ObjectFormat.of(path: path) {
        case .machO, .fatMachO:
            do { return try DebugFile(machO: path, arch: arch, uuid: uuid, symbolsFrom: companion) } catch { throw .machO(error) }
        default:
            do {
                let elf = try ElfFile(path: path)
                let other = elf.hasSymbolTable ? nil : companion.flatMap { try? ElfFile(path: $0) }
                return try DebugFile(elf: elf, symbolsFrom: other)
            } catch { throw .elf(error) }
        }
    }
}
