import Foundation
import ReportModel

/// One thin 64-bit little-endian Mach-O image: a whole thin file or one slice of a fat file.
/// Built only from load commands that were checked against the slice's size.
public struct MachOSlice: Sendable, Equatable {
    public let arch: Arch
    public let cpuType: Int32
    public let cpuSubtype: Int32
    /// `MH_EXECUTE`, `MH_DYLIB`, `MH_DSYM`, …
    public let fileType: UInt32
    /// `LC_UUID`: the id crash reports name the image by.
    public let uuid: BuildID
    /// Where the slice starts in its file, and its length.
    public let offset: UInt64
    public let size: UInt64
    public let segments: [MachOSegment]
    public let sections: [MachOSection]
    public let symtab: MachOSymtabCommand?

    /// `__TEXT.vmaddr`: the address the image expects to be loaded at.
    public var textVMAddress: UInt64 { segments.first { $0.name == "__TEXT" }?.vmAddress ?? 0 }
    public var textSection: MachOSection? { sections.first { $0.segment == "__TEXT" && $0.name == "__text" } }
    /// The `__DWARF` sections libdw can read (`__apple_*` accelerator tables are Apple's own).
    public var dwarfSections: [MachOSection] {
        sections.filter { $0.segment == "__DWARF" && $0.name.hasPrefix("__debug_") && $0.hasFileContents }
    }
    public var hasDWARF: Bool { dwarfSections.contains { $0.name == "__debug_info" } }
    public var hasSymbolTable: Bool { (symtab?.symbolCount ?? 0) > 0 }

    public var kindDescription: String {
        switch fileType {
        case 0x1: return "object"
        case 0x2: return "executable"
        case 0x6: return "dylib"
        case 0x7: return "dylinker"
        case 0x8: return "bundle"
        case 0xa: return "debug"  // MH_DSYM, the DWARF file inside a dSYM
        case 0xb: return "kext"
        default: return "mach-o-type-\(fileType)"
        }
    }

    /// An image that runs (its code has bytes), as opposed to a dSYM companion.
    public var isImage: Bool {
        [0x2, 0x6, 0x8, 0xb].contains(fileType) && (textSection?.hasFileContents ?? false)
    }

    /// Parses the slice at `[offset, offset+size)` of `file`.
    init(file: ByteReader, offset: UInt64, size: UInt64, path: String, label: String, declaredArch: Arch? = nil) throws(MachOError) {
        guard let r = file.slice(offset, size) else {
            throw .truncated(path: path, detail: "\(label)\(declaredArch.map { " (\($0))" } ?? "") at offset \(offset) with \(size) bytes ends past the end of the file (\(file.count) bytes)")
        }
        guard let magic = r.u32(0) else { throw .truncated(path: path, detail: "\(label) is shorter than a Mach-O magic number") }
        switch magic {
        case 0xfeed_facf: break
        case 0xfeed_face: throw .unsupported(path: path, detail: "\(label) is 32-bit Mach-O")
        case 0xcffa_edfe, 0xcefa_edfe: throw .unsupported(path: path, detail: "\(label) is big-endian Mach-O")
        default: throw .notMachO(path: path, detail: "\(label) has magic 0x\(String(magic, radix: 16))")
        }
        let headerSize = 32
        guard let cpu = r.u32(4), let sub = r.u32(8), let fileType = r.u32(12), let ncmds = r.u32(16),
            let sizeofcmds = r.u32(20)
        else { throw .truncated(path: path, detail: "\(label) is shorter than a mach_header_64 (\(r.count) bytes)") }
        self.cpuType = Int32(bitPattern: cpu)
        self.cpuSubtype = Int32(bitPattern: sub)
        self.fileType = fileType
        self.offset = offset
        self.size = size
        let arch = Arch(machOCPUType: cpuType, subtype: cpuSubtype)
        self.arch = arch
        let context = "\(label) (\(arch))"

        if UInt64(headerSize) + UInt64(sizeofcmds) > UInt64(r.count) {
            throw .truncated(path: path, detail: "\(context) load commands end at \(UInt64(headerSize) + UInt64(sizeofcmds)), the slice has \(r.count) bytes")
        }
        // Every load command is at least 8 bytes: a count that cannot fit is a corrupt header,
        // and refusing it here bounds the loop below.
        if UInt64(ncmds) * 8 > UInt64(sizeofcmds) {
            throw .corrupt(path: path, detail: "\(context) claims \(ncmds) load commands in \(sizeofcmds) bytes")
        }

        var uuid: BuildID?
        var segments: [MachOSegment] = []
        var sections: [MachOSection] = []
        var symtab: MachOSymtabCommand?
        var at = headerSize
        let end = headerSize + Int(sizeofcmds)
        for index in 0..<Int(ncmds) {
            guard at + 8 <= end, let cmd = r.u32(at), let cmdsize = r.u32(at + 4) else {
                throw .truncated(path: path, detail: "\(context) load command \(index) of \(ncmds) starts past the end of the load commands")
            }
            guard cmdsize >= 8, at + Int(cmdsize) <= end else {
                throw .truncated(path: path, detail: "\(context) load command \(index) (0x\(String(cmd, radix: 16))) is \(cmdsize) bytes, past the end of the load commands")
            }
            switch cmd {
            case 0x1b:  // LC_UUID
                guard cmdsize >= 24 else { throw .corrupt(path: path, detail: "\(context) LC_UUID is \(cmdsize) bytes") }
                uuid = BuildID(bytes: (0..<16).map { r.bytes[at + 8 + $0] })
            case 0x19:  // LC_SEGMENT_64
                guard cmdsize >= 72, let segname = r.name(at + 8), let vmaddr = r.u64(at + 24),
                    let vmsize = r.u64(at + 32), let fileoff = r.u64(at + 40), let filesize = r.u64(at + 48),
                    let nsects = r.u32(at + 64)
                else { throw .corrupt(path: path, detail: "\(context) LC_SEGMENT_64 is \(cmdsize) bytes") }
                guard UInt64(nsects) * 80 + 72 <= UInt64(cmdsize) else {
                    throw .truncated(path: path, detail: "\(context) segment \(segname) claims \(nsects) sections in a \(cmdsize)-byte load command")
                }
                guard r.contains(fileoff, filesize) else {
                    throw .truncated(path: path, detail: "\(context) segment \(segname) ends at \(fileoff &+ filesize), past the end of the slice (\(r.count) bytes)")
                }
                segments.append(MachOSegment(name: segname, vmAddress: vmaddr, vmSize: vmsize, fileOffset: fileoff, fileSize: filesize))
                for s in 0..<Int(nsects) {
                    let h = at + 72 + s * 80
                    guard let sectname = r.name(h), let seg = r.name(h + 16), let addr = r.u64(h + 32),
                        let size = r.u64(h + 40), let off = r.u32(h + 48), let flags = r.u32(h + 64)
                    else { throw .truncated(path: path, detail: "\(context) section header \(s) of \(segname) is cut short") }
                    let section = MachOSection(
                        number: sections.count + 1, segment: seg, name: sectname, address: addr, size: size,
                        offset: UInt64(off), flags: flags)
                    if section.hasFileContents && !r.contains(section.offset, section.size) {
                        throw .truncated(path: path, detail: "\(context) section \(seg),\(sectname) ends at \(section.offset &+ section.size), past the end of the slice (\(r.count) bytes)")
                    }
                    sections.append(section)
                }
            case 0x2:  // LC_SYMTAB
                guard cmdsize >= 24, let symoff = r.u32(at + 8), let nsyms = r.u32(at + 12),
                    let stroff = r.u32(at + 16), let strsize = r.u32(at + 20)
                else { throw .corrupt(path: path, detail: "\(context) LC_SYMTAB is \(cmdsize) bytes") }
                let command = MachOSymtabCommand(
                    symbolOffset: UInt64(symoff), symbolCount: UInt64(nsyms),
                    stringOffset: UInt64(stroff), stringSize: UInt64(strsize))
                guard r.contains(command.symbolOffset, command.symbolCount * 16) else {
                    throw .truncated(path: path, detail: "\(context) symbol table (\(nsyms) symbols at \(symoff)) ends past the end of the slice (\(r.count) bytes)")
                }
                guard r.contains(command.stringOffset, command.stringSize) else {
                    throw .truncated(path: path, detail: "\(context) string table (\(strsize) bytes at \(stroff)) ends past the end of the slice (\(r.count) bytes)")
                }
                symtab = command
            default:
                break
            }
            at += Int(cmdsize)
        }
        guard let uuid else { throw .missingUUID(path: path, arch: arch.name) }
        self.uuid = uuid
        self.segments = segments
        self.sections = sections
        self.symtab = symtab
    }
}
