import ReportModel

extension DebugFile {
    /// Opens one slice of a Mach-O file (thin, fat, or the DWARF file in a dSYM): chosen by
    /// `uuid`, else by `arch`, else the only one. Without DWARF, its `LC_SYMTAB` answers.
    /// `symbolsFrom` is a Mach-O file whose slice with the same UUID supplies symbols when
    /// this one has none.
    public convenience init(machO path: String, arch: Arch? = nil, uuid: BuildID? = nil, symbolsFrom companion: String? = nil) throws(MachOError) {
        let input: RegularFile
        do { input = try RegularFile(path: path) } catch { throw .unreadable(path: path, reason: error.reason) }
        try self.init(machO: input, arch: arch, uuid: uuid, symbolsFrom: companion.flatMap { try? RegularFile(path: $0) })
    }

    /// `init(machO:arch:uuid:symbolsFrom:)` on files already open.
    public convenience init(machO input: RegularFile, arch: Arch? = nil, uuid: BuildID? = nil, symbolsFrom companion: RegularFile? = nil) throws(MachOError) {
        let mapping = try MappedMachO(file: input)
        let file = mapping.file
        let slice: MachOSlice
        if let uuid {
            guard let s = file.slice(uuid: uuid) else {
                throw .noSuchArch(path: input.path, arch: "UUID \(uuid)", available: file.slices.map { "\($0.arch) \($0.uuid)" })
            }
            slice = s
        } else {
            slice = try file.slice(arch: arch)
        }
        // The slice came out of `file.slices`, so it is found; the guard keeps a crash off this path.
        guard let index = file.slices.firstIndex(of: slice) else {
            throw .noSuchArch(path: input.path, arch: slice.arch.name, available: file.architectures.map(\.name))
        }
        try self.init(mapping: mapping, slice: index, symbolsFrom: companion.flatMap { try? MappedMachO(file: $0) })
    }

    /// Every slice of a Mach-O file, in the file's order, all read from one mapping of it.
    public static func slices(machO input: RegularFile) throws(MachOError) -> (file: MachOFile, slices: [DebugFile]) {
        let mapping = try MappedMachO(file: input)
        var out: [DebugFile] = []
        for index in mapping.file.slices.indices {
            out.append(try DebugFile(mapping: mapping, slice: index, symbolsFrom: nil))
        }
        return (mapping.file, out)
    }

    /// Slice `index` of `mapping`; `companion`'s slice with the same UUID lends its symbols
    /// when this one has none.
    private convenience init(mapping: MappedMachO, slice index: Int, symbolsFrom companion: MappedMachO?) throws(MachOError) {
        let path = mapping.file.path
        let slice = mapping.file.slices[index]
        let image = mapping.image
        let start = mapping.elfImageOffset(slice: index)
        var symbols = SymbolTable(machO: slice, file: ByteReader(bytes: image.contents, bigEndian: false))
        if symbols.isEmpty, let companion, let match = companion.file.slice(uuid: slice.uuid) {
            symbols = SymbolTable(machO: match, file: ByteReader(bytes: companion.image.contents, bigEndian: false))
        }
        do {
            let elf = try ElfFile(image: image, at: start, path: path)
            try self.init(elf: elf, symbols: symbols, machO: slice, preferredBase: slice.textVMAddress, architecture: slice.arch)
        } catch {
            throw .corrupt(path: path, detail: "\(slice.arch) DWARF: \(error.description)")
        }
    }

    /// Opens an ELF file or a Mach-O file (see `init(machO:arch:uuid:symbolsFrom:)`), by its magic number.
    public static func open(path: String, arch: Arch? = nil, uuid: BuildID? = nil, symbolsFrom companion: String? = nil) throws(DebugFileError) -> DebugFile {
        let file: RegularFile
        do { file = try RegularFile(path: path) } catch { throw .elf(.unreadable(path: path, reason: error.reason)) }
        return try open(file: file, arch: arch, uuid: uuid, symbolsFrom: companion.flatMap { try? RegularFile(path: $0) })
    }

    /// `open(path:arch:uuid:symbolsFrom:)` on files already open. An ELF companion lends its
    /// symbols only when its build-id is the debug file's.
    public static func open(file: RegularFile, arch: Arch? = nil, uuid: BuildID? = nil, symbolsFrom companion: RegularFile? = nil) throws(DebugFileError) -> DebugFile {
        switch ObjectFormat.of(file: file) {
        case .machO, .fatMachO:
            do { return try DebugFile(machO: file, arch: arch, uuid: uuid, symbolsFrom: companion) } catch { throw .machO(error) }
        default:
            do {
                let elf = try ElfFile(file: file)
                let other = elf.hasSymbolTable ? nil
                    : companion.flatMap { try? ElfFile(file: $0) }.flatMap { $0.buildID == elf.buildID ? $0 : nil }
                return try DebugFile(elf: elf, symbolsFrom: other)
            } catch { throw .elf(error) }
        }
    }
}
