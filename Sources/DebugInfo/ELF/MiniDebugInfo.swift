import CElfUtils
import Compression

extension ElfFile {
    /// The most a `.gnu_debugdata` section may decode to: Fedora's are tens of KB (a symbol
    /// table of the local functions), a large binary's a few MB.
    static let maxMiniDebugInfoSize = 64 << 20

    /// The symbol table of this file's MiniDebugInfo (`.gnu_debugdata`: an xz-compressed ELF
    /// file holding `.symtab`, as Fedora and RHEL ship it), or nil when there is none. A section
    /// that does not decode refuses the file, saying why, as a damaged debug section does.
    func miniDebugInfoSymbols() throws(ElfError) -> SymbolTable? {
        guard let section = sections.first(where: { $0.name == ".gnu_debugdata" && $0.hasFileContents }) else { return nil }
        guard let scn = elf_getscn(elf, section.index), let data = elf_getdata(scn, nil), let raw = data.pointee.d_buf else {
            throw .corrupt(path: path, detail: "section .gnu_debugdata: unreadable contents (\(Self.elfMessage()))")
        }
        let decoded: [UInt8]
        do {
            decoded = try Xz.decompress(UnsafeRawBufferPointer(start: raw, count: data.pointee.d_size), limit: Self.maxMiniDebugInfoSize)
        } catch .tooLarge {
            throw .tooLarge(path: path, detail: "section .gnu_debugdata decodes to more than \(Self.maxMiniDebugInfoSize >> 20) MiB")
        } catch {
            throw .corrupt(path: path, detail: "section .gnu_debugdata (MiniDebugInfo): \(error.description)")
        }
        let inner: ElfFile
        do { inner = try ElfFile(bytes: decoded, path: path + " (.gnu_debugdata)") } catch {
            throw .corrupt(path: path, detail: "section .gnu_debugdata (MiniDebugInfo) holds no usable ELF file: \(error.description)")
        }
        return SymbolTable(elf: inner)
    }
}
