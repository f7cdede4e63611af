import CElfUtils
import Foundation
import ReportModel
import SystemCalls

/// An open ELF file: owns the file descriptor, the libelf handle and, when the file has
/// DWARF, the libdw handle. Every libelf/libdw pointer in Stackline is created and freed here,
/// and none outlives this object.
public final class ElfFile {
    public let path: String
    public let fileSize: UInt64
    /// `ET_EXEC`, `ET_DYN`, `ET_REL`, `ET_CORE`.
    public let elfType: UInt16
    public let machine: UInt16
    public let is64Bit: Bool
    public let sections: [ElfSection]
    public let loadSegments: [LoadSegment]
    /// GNU build-id, if the file has a `.note.gnu.build-id`.
    public let buildID: BuildID?

    /// What libelf reads from: a file descriptor, or a memory image (a Mach-O slice behind
    /// a synthesized ELF header). Released only after `elf_end`, in `deinit`.
    private enum Backing {
        case descriptor(Int32)
        case memory(MappedFile)
        /// Bytes decoded in memory (MiniDebugInfo's inner ELF file), owned here.
        case heap(UnsafeMutableRawBufferPointer)

        func release() {
            switch self {
            case .descriptor(let fd): close(fd)
            case .heap(let bytes): bytes.deallocate()
            case .memory: break
            }
        }
    }

    private let backing: Backing
    let elf: OpaquePointer
    /// nil when the file has no DWARF sections libdw accepts, or once `endDWARF()` freed it.
    private(set) var dwarf: OpaquePointer?
    public let hasDWARF: Bool
    /// Why `dwarf` is nil, in words for a person; nil when the file has DWARF.
    public let dwarfAbsence: String?
    /// Sections Stackline inflated for libdw; freed after `elf_end`.
    private let inflated: CompressedSections

    private static let libelfReady: Bool = elf_version(UInt32(EV_CURRENT)) != UInt32(EV_NONE)

    public convenience init(path: String) throws(ElfError) {
        let file: RegularFile
        do { file = try RegularFile(path: path) } catch { throw .unreadable(path: path, reason: error.reason) }
        try self.init(file: file)
    }

    /// Reads the file `file` has open (through a descriptor of its own: `file` may be closed).
    public convenience init(file: RegularFile) throws(ElfError) {
        _ = Self.libelfReady
        let path = file.path
        let fd: Int32
        do { fd = try SystemCall.check("fcntl", path: path) { fcntl(file.descriptor, F_DUPFD_CLOEXEC, 0) } } catch {
            throw .unreadable(path: path, reason: error.reason)
        }
        let st: stat
        do { st = try SystemCall.status(of: fd, path: path) } catch {
            close(fd)
            throw .unreadable(path: path, reason: error.reason)
        }
        guard let elf = elf_begin(fd, ELF_C_READ_MMAP, nil) else {
            close(fd)
            throw .notELF(path: path)
        }
        try self.init(elf: elf, path: path, fileSize: UInt64(st.st_size), backing: .descriptor(fd))
    }

    /// Opens the ELF image that starts `offset` bytes into `image.region` (in the headroom) and
    /// runs to its end. `image` stays alive as long as this object, because libelf and libdw point into it.
    convenience init(image: MappedFile, at offset: Int, path: String) throws(ElfError) {
        _ = Self.libelfReady
        let region = UnsafeMutableRawBufferPointer(rebasing: image.region[offset...])
        guard let elf = elf_memory(region.baseAddress?.assumingMemoryBound(to: CChar.self), region.count) else {
            throw .corrupt(path: path, detail: "in-memory ELF image refused (\(Self.elfMessage()))")
        }
        try self.init(elf: elf, path: path, fileSize: UInt64(region.count), backing: .memory(image))
    }

    /// Opens an ELF image held in `bytes` (copied), named `path` in messages.
    convenience init(bytes: [UInt8], path: String) throws(ElfError) {
        _ = Self.libelfReady
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        copy.copyBytes(from: bytes)
        guard let elf = elf_memory(copy.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count) else {
            copy.deallocate()
            throw .corrupt(path: path, detail: "in-memory ELF image refused (\(Self.elfMessage()))")
        }
        try self.init(elf: elf, path: path, fileSize: UInt64(bytes.count), backing: .heap(copy))
    }

    /// Takes ownership of `elf` and `backing`, and releases both if the file is refused.
    private init(elf: OpaquePointer, path: String, fileSize: UInt64, backing: Backing) throws(ElfError) {
        self.path = path
        self.fileSize = fileSize
        // From here on, `fail` releases what has been acquired if init fails.
        func fail(_ e: ElfError) -> ElfError {
            elf_end(elf)
            backing.release()
            return e
        }
        guard elf_kind(elf) == ELF_K_ELF else { throw fail(.notELF(path: path)) }
        var ehdr = GElf_Ehdr()
        guard gelf_getehdr(elf, &ehdr) != nil else {
            throw fail(.corrupt(path: path, detail: "unreadable ELF header (\(Self.elfMessage()))"))
        }
        elfType = ehdr.e_type
        machine = ehdr.e_machine
        is64Bit = gelf_getclass(elf) == ELFCLASS64

        // libelf maps what it can and reports missing bytes late or never, so check the
        // header tables against the file size before trusting anything in them.
        let shEnd = ehdr.e_shoff &+ UInt64(ehdr.e_shnum) &* UInt64(ehdr.e_shentsize)
        if ehdr.e_shoff != 0 && (shEnd > fileSize || shEnd < ehdr.e_shoff) {
            throw fail(.truncated(path: path, detail: "section header table ends at \(shEnd), file has \(fileSize) bytes"))
        }
        let phEnd = ehdr.e_phoff &+ UInt64(ehdr.e_phnum) &* UInt64(ehdr.e_phentsize)
        if ehdr.e_phoff != 0 && (phEnd > fileSize || phEnd < ehdr.e_phoff) {
            throw fail(.truncated(path: path, detail: "program header table ends at \(phEnd), file has \(fileSize) bytes"))
        }

        var sections: [ElfSection] = []
        var shstrndx = 0
        if elf_getshdrstrndx(elf, &shstrndx) != 0 {
            throw fail(.corrupt(path: path, detail: "no section name table (\(Self.elfMessage()))"))
        }
        // Sections whose name lies outside the name table: libdw refuses the whole file for one.
        var unnamed: [Int] = []
        var scn = elf_nextscn(elf, nil)
        while let s = scn {
            var shdr = GElf_Shdr()
            guard gelf_getshdr(s, &shdr) != nil else {
                throw fail(.corrupt(path: path, detail: "unreadable section header (\(Self.elfMessage()))"))
            }
            let cName = elf_strptr(elf, shstrndx, Int(shdr.sh_name))
            if cName == nil { unnamed.append(elf_ndxscn(s)) }
            let name = cName.map { String(cString: $0) } ?? ""
            let section = ElfSection(
                index: elf_ndxscn(s), name: name, type: shdr.sh_type, flags: shdr.sh_flags,
                address: shdr.sh_addr, offset: shdr.sh_offset, size: shdr.sh_size,
                link: shdr.sh_link, entrySize: shdr.sh_entsize)
            if section.hasFileContents {
                let end = shdr.sh_offset &+ shdr.sh_size
                if end > fileSize || end < shdr.sh_offset {
                    throw fail(.truncated(path: path, detail: "section \(name.isEmpty ? "#\(section.index)" : name) ends at \(end), file has \(fileSize) bytes"))
                }
            }
            sections.append(section)
            scn = elf_nextscn(elf, s)
        }
        self.sections = sections

        var segments: [LoadSegment] = []
        var phnum = 0
        if elf_getphdrnum(elf, &phnum) == 0 {
            for i in 0..<phnum {
                var phdr = GElf_Phdr()
                guard gelf_getphdr(elf, Int32(i), &phdr) != nil else { continue }
                if phdr.p_type == UInt32(PT_LOAD) {
                    segments.append(LoadSegment(
                        virtualAddress: phdr.p_vaddr, memorySize: phdr.p_memsz,
                        fileOffset: phdr.p_offset, fileSize: phdr.p_filesz, alignment: phdr.p_align))
                }
            }
        }
        loadSegments = segments

        var idPtr: UnsafeRawPointer?
        let idLength = dwelf_elf_gnu_build_id(elf, &idPtr)
        if idLength > 0, let idPtr {
            buildID = BuildID(bytes: UnsafeRawBufferPointer(start: idPtr, count: idLength))
        } else {
            buildID = nil
        }

        // After the section list, which describes the file as stored (debuginfod serves its bytes).
        do { inflated = try CompressedSections.inflate(elf, sections: sections, is64Bit: is64Bit, fileSize: fileSize, path: path) } catch { throw fail(error) }
        let debugInfo = sections.first { $0.name == ".debug_info" || $0.name == ".zdebug_info" }
        // libdw skips a section without contents and then reports "no DWARF information", as
        // for a file that never had any: say which it is instead.
        switch debugInfo {
        case nil: dwarfAbsence = "no .debug_info section (stripped, or built without -g)"
        case let section? where !section.hasFileContents:
            dwarfAbsence = "\(section.name) has no contents here (SHT_NOBITS: the DWARF is in a separate debug file)"
        case let section? where section.size == 0: dwarfAbsence = "\(section.name) is empty"
        default: dwarfAbsence = nil
        }
        dwarf = dwarfAbsence == nil ? dwarf_begin_elf(elf, DWARF_C_READ, nil) : nil
        if dwarfAbsence == nil && dwarf == nil {
            var reason = "DWARF unreadable (\(Self.dwarfMessage()))"
            if let first = unnamed.first { reason += ": the name of section #\(first) lies outside the section name table" }
            inflated.release()
            throw fail(.corrupt(path: path, detail: reason))
        }
        hasDWARF = dwarf != nil
        self.backing = backing
        self.elf = elf
    }

    deinit {
        if let dwarf { dwarf_end(dwarf) }
        elf_end(elf)
        inflated.release()
        backing.release()  // a memory image is unmapped after this, when `backing` is released
    }

    /// Frees libdw's reader and everything it cached (line tables, abbreviations, DIE trees),
    /// unless it refers to a supplementary (dwz) file, whose strings it owns: for a caller that
    /// has read all it needs from the DWARF (`DebugFile.endDWARFReading()`). Section data
    /// belongs to the ELF handle and stays.
    /// The file's pages then leave the resident set (`dropReadPages`).
    func endDWARF() {
        guard let dwarf, dwarf_getalt(dwarf) == nil else { return }
        dwarf_end(dwarf)
        self.dwarf = nil
        dropReadPages()
    }

    /// A second reader of the same open file (its own descriptor, libelf handle and libdw
    /// reader), for another thread to read DWARF units beside this one: libdw 0.188 is not
    /// thread-safe within one reader, and separate readers share nothing. Nil for a file read
    /// from memory, one whose sections Stackline inflated (they would be inflated again), one
    /// with a supplementary (dwz) file, or when it cannot be opened again.
    func secondReader() -> ElfFile? {
        guard case .descriptor(let fd) = backing, inflated.buffers.isEmpty, let dwarf, dwarf_getalt(dwarf) == nil,
            let copy = try? SystemCall.check("fcntl", path: path, { fcntl(fd, F_DUPFD_CLOEXEC, 0) })
        else { return nil }
        guard let elf = elf_begin(copy, ELF_C_READ_MMAP, nil) else {
            close(copy)
            return nil
        }
        // The private init releases `elf` and the descriptor if it refuses the file.
        return try? ElfFile(elf: elf, path: path, fileSize: fileSize, backing: .descriptor(copy))
    }

    /// Takes the pages of the file read so far out of this process's resident set: for a
    /// caller that has gone through much of it once (indexing every unit) and will read little
    /// of it again. Pages read later map back from the page cache (`make bench`, the symcache
    /// build's peak RSS). Clean pages of libelf's read-only mapping, so nothing is lost; a file
    /// read through memory of its own (a Mach-O image, MiniDebugInfo) keeps its pages.
    func dropReadPages() {
        guard case .descriptor = backing else { return }
        var size = 0
        if let raw = elf_rawfile(elf, &size), size > 0 {
            SystemCall.dropResidentPages(of: UnsafeRawBufferPointer(start: raw, count: size))
        }
    }
    public var hasSymbolTable: Bool { sections.contains { $0.type == UInt32(SHT_SYMTAB) } }
    /// A `.gnu_debugdata` section (MiniDebugInfo) with contents: a symbol table, xz-compressed.
    public var hasMiniDebugInfo: Bool { sections.contains { $0.name == ".gnu_debugdata" && $0.hasFileContents } }
    /// Names answer from a symbol table of its own or from MiniDebugInfo's: what the store and
    /// `symbols verify` call "has a symbol table". `DebugFile` has already decoded the section.
    public var answersFromSymbols: Bool { hasSymbolTable || hasMiniDebugInfo }
    public var hasDynamicSymbols: Bool { sections.contains { $0.type == UInt32(SHT_DYNSYM) } }
    /// True for files made by `objcopy --only-keep-debug`: code sections carry no bytes.
    public var isDebugOnly: Bool {
        guard let text = sections.first(where: { $0.name == ".text" }) else { return hasDWARF }
        return text.type == UInt32(SHT_NOBITS)
    }

    /// The address the image expects to be mapped at: the first `PT_LOAD`'s vaddr rounded
    /// down to the page. A runtime address minus (lowest mapping − this) is a file address.
    public var preferredBase: UInt64 {
        guard let first = loadSegments.min(by: { $0.virtualAddress < $1.virtualAddress }) else { return 0 }
        return first.virtualAddress & ~UInt64(0xfff)
    }

    public var architecture: Arch { Arch(elfMachine: machine) }

    public var kindDescription: String {
        if isDebugOnly { return "debug" }
        switch Int32(elfType) {
        case ET_EXEC: return "executable"
        case ET_DYN:
            if loadSegments.isEmpty { return "object" }
            // A PIE is ET_DYN too; only executables ask for a program interpreter.
            return sections.contains { $0.name == ".interp" } ? "executable" : "shared-object"
        case ET_REL: return "relocatable"
        case ET_CORE: return "core"
        default: return "elf"
        }
    }

    static func elfMessage() -> String { String(cString: elf_errmsg(-1)) }
    static func dwarfMessage() -> String { String(cString: dwarf_errmsg(-1)) }
}
