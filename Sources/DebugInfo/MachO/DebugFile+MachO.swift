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
        let path = input.path
        let slice: MachOSlice
        let file = try MachOFile(file: input)
        if let uuid {
            guard let s = file.slice(uuid: uuid) else {
                throw .noSuchArch(path: path, arch: "UUID \(uuid)", available: file.slices.map { "\($0.arch) \($0.uuid)" })
            }
            slice = s
        } else {
            slice = try file.slice(arch: arch)
        }
        let header = MachOElfImage.headerSize(for: slice)
        let image: MappedFile
        do { image = try MappedFile(file: input, headroom: header) } catch { throw MachOError(error) }
        // The file was parsed from an earlier mapping: its offsets hold only for the same bytes.
        guard UInt64(image.fileSize) == file.fileSize, let again = try? MachOFile(path: path, bytes: image.contents),
            again.slices == file.slices
        else { throw .unreadable(path: path, reason: "the file changed while it was being opened") }
        let bytes = MachOElfImage.header(for: slice, fileStart: image.headroom)
        image.region.copyBytes(from: bytes)

        var symbols = SymbolTable(machO: slice, file: ByteReader(bytes: image.contents, bigEndian: false))
        if symbols.isEmpty, let companion, let other = try? MachOFile(file: companion),
            let match = other.slice(uuid: slice.uuid), let mapped = try? MappedFile(file: companion)
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
