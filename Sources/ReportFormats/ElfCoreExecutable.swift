import Foundation
import ReportModel

/// `stackline submit --exe PATH core`: a core file that names no files gets its executable's.
///
/// The kernel's cores list every mapped file (`NT_FILE`) and hold the first page of each ELF
/// mapping, which is where `ElfCoreReader` finds the modules and their build ids. Some writers
/// keep neither: qemu-user's guest cores (the way to crash an arm64 program on an x86-64 build
/// machine) have no `NT_FILE` and skip the executable's mappings. Given the executable, this
/// adds what the kernel would have written for it: an `NT_FILE` note of its `PT_LOAD` mappings
/// and a `PT_LOAD` holding its headers and notes, at the address the core's auxiliary vector
/// (`AT_PHDR`) says it was loaded. The result is still an ordinary ELF core, so the server reads
/// it as any other, and the original bytes are kept in front unchanged.
public enum ElfCoreExecutable {
    /// The most of the executable's first bytes added (its headers and notes are well within).
    static let maxHeaderBytes = 65_536
    static let pageSize: UInt64 = 4_096

    public struct Problem: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// What `adding` did.
    public enum Outcome {
        /// The core with the executable's mappings and headers added.
        case added(Data)
        /// The core already names its files: it is left as it is.
        case alreadyNamesFiles
    }

    public static func adding(executable: Data, path: String, to core: Data) throws(Problem) -> Outcome {
        do {
            return try add(executable: NativeBytes(executable), path: path, core: NativeBytes(core))
        } catch let problem as NativeProblem {
            throw Problem(problem.description)
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem("\(error)")
        }
    }

    private struct Segment {
        var type: UInt32
        var offset: UInt64
        var vaddr: UInt64
        var filesz: UInt64
        var memsz: UInt64
    }

    private static func segments(_ file: NativeBytes, _ what: String) throws -> (segments: [Segment], phoff: UInt64, phentsize: Int) {
        guard file.data.count >= 64, file.data.prefix(4).elementsEqual([0x7f, 0x45, 0x4c, 0x46]),
            file.data[file.data.startIndex + 4] == 2, file.data[file.data.startIndex + 5] == 1
        else { throw Problem("\(what) is not a 64-bit little-endian ELF file") }
        let phoff = try file.u64(32)
        let phentsize = Int(try file.u16(54))
        guard phentsize >= 56, phoff <= UInt64(Int.max) else { throw Problem("\(what): program headers of \(phentsize) bytes at \(phoff)") }
        let count = try file.count(UInt64(try file.u16(56)), each: phentsize, from: Int(phoff), limit: ElfCoreReader.maxSegments, "\(what) program headers")
        let segments = try (0..<count).map { i throws -> Segment in
            let h = Int(phoff) + i * phentsize
            return Segment(
                type: try file.u32(h), offset: try file.u64(h + 8), vaddr: try file.u64(h + 16),
                filesz: try file.u64(h + 32), memsz: try file.u64(h + 40))
        }
        return (segments, phoff, phentsize)
    }

    private static func add(executable exe: NativeBytes, path: String, core: NativeBytes) throws -> Outcome {
        guard ElfCoreFormat().matches(core.data) else { throw Problem("the input is not an ELF core file") }
        guard try exe.u16(16) == 2 || exe.u16(16) == 3 else { throw Problem("\(path) is not an executable (ELF type \(try exe.u16(16)))") }
        guard try exe.u16(18) == core.u16(18) else {
            throw Problem("\(path) is for machine \(try exe.u16(18)), the core for \(try core.u16(18))")
        }
        let (coreSegments, _, corePhentsize) = try segments(core, "the core")
        var auxv: [UInt64: UInt64] = [:]
        for segment in coreSegments where segment.type == 4 {
            for note in try ElfCoreReader.notes(try core.bytes(at: segment.offset, count: segment.filesz, "core notes")) where note.name == "CORE" {
                if note.type == 0x4649_4c45 { return .alreadyNamesFiles }
                if note.type == 6 {  // NT_AUXV: (type, value) pairs
                    let d = NativeBytes(note.descriptor)
                    for i in 0..<(note.descriptor.count / 16) where auxv[try d.u64(16 * i)] == nil {
                        auxv[try d.u64(16 * i)] = try d.u64(16 * i + 8)
                    }
                }
            }
        }
        // Where it was loaded: AT_PHDR is the address of its program headers in memory.
        let (exeSegments, exePhoff, _) = try segments(exe, path)
        let loads = exeSegments.filter { $0.type == 1 && $0.memsz > 0 }
        guard let first = loads.min(by: { $0.vaddr < $1.vaddr }), first.offset == 0 else {
            throw Problem("\(path): no loadable segment starts at its file's beginning")
        }
        guard let phdrInMemory = auxv[3] else { throw Problem("the core has no auxiliary vector (NT_AUXV with AT_PHDR): where the program was loaded is unknown") }
        let phdrVaddr = exeSegments.first { $0.type == 6 }?.vaddr ?? (first.vaddr &+ exePhoff)
        let bias = phdrInMemory &- phdrVaddr
        // The entry point confirms it is this program that ran (not another build).
        if let entry = auxv[9], entry != (try exe.u64(24)) &+ bias {
            throw Problem(String(format: "%@ is not the program this core is of: its entry point would be 0x%llx, the core's is 0x%llx", path, (try exe.u64(24)) &+ bias, entry))
        }

        // NT_FILE: count, page size, (start, end, file offset in pages) per mapping, then the paths.
        var file = Data()
        func u64(_ value: UInt64, into out: inout Data) { withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) } }
        u64(UInt64(loads.count), into: &file)
        u64(pageSize, into: &file)
        for load in loads {
            let start = (load.vaddr &+ bias) & ~(pageSize - 1)
            let (end, overflow) = (load.vaddr &+ bias).addingReportingOverflow(load.memsz)
            guard !overflow else { throw Problem("\(path): a segment runs past the end of the address space") }
            u64(start, into: &file)
            u64(end, into: &file)
            u64(load.offset / pageSize, into: &file)
        }
        for _ in loads { file.append(contentsOf: Array(path.utf8) + [0]) }

        // The headers and the notes that lie in the first segment, as the kernel's first page has them.
        let notesEnd = exeSegments.filter { $0.type == 4 && $0.offset < first.filesz }.map { $0.offset &+ $0.filesz }.max() ?? 0
        let headerBytes = min(UInt64(maxHeaderBytes), first.filesz, max(pageSize, (notesEnd + pageSize - 1) & ~(pageSize - 1)))
        let headers = try exe.bytes(at: 0, count: min(headerBytes, UInt64(exe.data.count)), "\(path) headers")

        var out = core.data
        func pad(_ out: inout Data) { while out.count % 8 != 0 { out.append(0) } }
        pad(&out)
        let noteOffset = UInt64(out.count)
        var note = Data()
        for value in [UInt32(5), UInt32(file.count), UInt32(0x4649_4c45)] { withUnsafeBytes(of: value.littleEndian) { note.append(contentsOf: $0) } }
        note.append(contentsOf: Array("CORE".utf8) + [0, 0, 0, 0])
        note.append(file)
        while note.count % 4 != 0 { note.append(0) }
        out.append(note)
        pad(&out)
        let headersOffset = UInt64(out.count)
        out.append(headers)
        pad(&out)

        // The program header table moves to the end: the old entries, then the two new ones.
        let tableOffset = UInt64(out.count)
        let coreBytes = [UInt8](core.data)
        let oldPhoff = Int(try core.u64(32))
        out.append(contentsOf: coreBytes[oldPhoff..<oldPhoff + coreSegments.count * corePhentsize])
        func header(type: UInt32, flags: UInt32, offset: UInt64, vaddr: UInt64, size: UInt64) -> Data {
            var h = Data()
            for value in [type, flags] { withUnsafeBytes(of: value.littleEndian) { h.append(contentsOf: $0) } }
            for value in [offset, vaddr, 0, size, size, 1] { withUnsafeBytes(of: value.littleEndian) { h.append(contentsOf: $0) } }
            while h.count < corePhentsize { h.append(0) }
            return h
        }
        out.append(header(type: 4, flags: 4, offset: noteOffset, vaddr: 0, size: UInt64(note.count)))
        out.append(header(type: 1, flags: 5, offset: headersOffset, vaddr: first.vaddr &+ bias, size: UInt64(headers.count)))
        let count = coreSegments.count + 2
        guard count < 0xffff else { throw Problem("the core has too many segments to add two") }
        out.replaceSubrange(out.startIndex + 32..<out.startIndex + 40, with: withUnsafeBytes(of: tableOffset.littleEndian) { Data($0) })
        out.replaceSubrange(out.startIndex + 56..<out.startIndex + 58, with: withUnsafeBytes(of: UInt16(count).littleEndian) { Data($0) })
        return .added(out)
    }
}
