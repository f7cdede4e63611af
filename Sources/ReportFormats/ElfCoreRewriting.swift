import Foundation
import ReportModel

/// What `stackline submit` changes in a core file before it is stored, on the machine that has
/// the core (docs/native.md). The result is still an ordinary ELF core, which the server reads
/// as any other.
///
/// - `addingExecutable`: some writers name no files. qemu-user's guest cores (the way to crash
///   an arm64 program on an x86-64 build machine) have no `NT_FILE` and skip the executable's
///   mappings. Given the program (`--exe`), this adds what the kernel would have written for
///   it: an `NT_FILE` note of its `PT_LOAD` mappings and a `PT_LOAD` with its headers and notes
///   (where `ElfCoreReader` finds its build id), at the address the core's auxiliary vector
///   (`AT_PHDR`) says it was loaded.
/// - `slimmed`: a core past the report limit (a process with large heaps) keeps only what the
///   unwinder reads: the notes, each thread's stack from its stack pointer up, and the first
///   page of every mapped ELF file (its headers and build id, as the kernel dumps by default).
public enum ElfCoreRewriting {
    public struct Problem: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    static let pageSize: UInt64 = 4_096
    /// The most of an executable's first bytes added (its headers and notes are well within).
    static let maxHeaderBytes: UInt64 = 65_536
    /// A thread's stack kept by `slimmed`, at most, from its stack pointer up (Linux's default
    /// stack is 8 MiB), and what is kept below the pointer (x86-64's red zone is 128 bytes).
    static let maxStackBytes: UInt64 = 8 << 20
    static let belowStackPointer: UInt64 = 4_096

    /// What `addingExecutable` did.
    public enum Outcome {
        /// The core with the executable's mappings and headers added.
        case added(Data)
        /// The core already names its files: it is left as it is.
        case alreadyNamesFiles
    }

    public static func addingExecutable(_ executable: Data, path: String, to core: Data) throws(Problem) -> Outcome {
        try attempt { () throws -> Outcome in try addExecutable(NativeBytes(executable), path: path, core: try CoreFile(NativeBytes(core))) }
    }

    public static func slimmed(_ core: Data) throws(Problem) -> Data {
        try attempt { () throws -> Data in try slim(try CoreFile(NativeBytes(core))) }
    }

    private static func attempt<T>(_ body: () throws -> T) throws(Problem) -> T {
        do { return try body() } catch let problem as NativeProblem {
            throw Problem(problem.description)
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem("\(error)")
        }
    }

    typealias Segment = ElfCoreReader.Segment

    /// The program headers of `file`, which must be a 64-bit little-endian ELF file.
    static func segments(_ file: NativeBytes, _ what: String) throws -> [Segment] {
        guard file.data.count >= 64, file.data.prefix(4).elementsEqual([0x7f, 0x45, 0x4c, 0x46]),
            file.data[file.data.startIndex + 4] == 2, file.data[file.data.startIndex + 5] == 1
        else { throw Problem("\(what) is not a 64-bit little-endian ELF file") }
        return try ElfCoreReader.segments(file, owner: what)
    }

    /// A core's segments and notes, and the writer of a new core from them.
    struct CoreFile {
        let input: NativeBytes
        let segments: [Segment]
        let notes: [ElfCoreReader.Note]

        init(_ input: NativeBytes) throws {
            guard ElfCoreFormat().matches(input.data) else { throw Problem("the input is not an ELF core file") }
            self.input = input
            segments = try ElfCoreRewriting.segments(input, "the core")
            var notes: [ElfCoreReader.Note] = []
            for segment in segments where segment.type == 4 {
                notes += try ElfCoreReader.notes(try input.bytes(at: segment.offset, count: segment.filesz, "core notes"))
            }
            self.notes = notes.filter { $0.name == "CORE" }
        }

        func bytes(_ segment: Segment) throws -> Data { try input.bytes(at: segment.offset, count: segment.filesz, "a segment") }

        /// A core of the same ELF header with `parts` as its segments, in order: the program
        /// headers follow the ELF header, then each part's bytes, 8-byte aligned.
        func written(_ parts: [(segment: Segment, bytes: Data)]) throws -> Data {
            guard parts.count < 0xffff else { throw Problem("\(parts.count) segments are more than a core's header counts") }
            var out = Data(input.data.prefix(64))
            func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
                // overflow: the ELF header's own field offsets (32…62), at most 8 bytes each.
                withUnsafeBytes(of: value.littleEndian) { out.replaceSubrange(offset..<offset + MemoryLayout<T>.size, with: $0) }
            }
            put(UInt64(64), at: 32)  // e_phoff
            put(UInt64(0), at: 40)  // e_shoff: no sections
            put(UInt16(56), at: 54)  // e_phentsize
            put(UInt16(parts.count), at: 56)
            put(UInt16(0), at: 58)  // e_shentsize
            put(UInt16(0), at: 60)  // e_shnum
            put(UInt16(0), at: 62)  // e_shstrndx
            // overflow: parts.count < 0xffff, checked above.
            var offset = UInt64(64 + 56 * parts.count)
            var table = Data()
            var body = Data()
            for (segment, bytes) in parts {
                let padding = (8 - offset % 8) % 8
                body.append(Data(count: Int(padding)))
                offset += padding
                for value in [segment.type, segment.flags] { withUnsafeBytes(of: value.littleEndian) { table.append(contentsOf: $0) } }
                let memsz = max(segment.memsz, UInt64(bytes.count))
                for value in [offset, segment.vaddr, 0, UInt64(bytes.count), memsz, segment.type == 1 ? 1 : 4] {
                    withUnsafeBytes(of: value.littleEndian) { table.append(contentsOf: $0) }
                }
                body.append(bytes)
                offset += UInt64(bytes.count)
            }
            return out + table + body
        }
    }

    private static func addExecutable(_ exe: NativeBytes, path: String, core: CoreFile) throws -> Outcome {
        if core.notes.contains(where: { $0.type == 0x4649_4c45 }) { return .alreadyNamesFiles }
        guard try exe.u16(16) == 2 || exe.u16(16) == 3 else { throw Problem("\(path) is not an executable (ELF type \(try exe.u16(16)))") }
        guard try exe.u16(18) == core.input.u16(18) else {
            throw Problem("\(path) is for machine \(try exe.u16(18)), the core for \(try core.input.u16(18))")
        }
        var auxv: [UInt64: UInt64] = [:]
        for note in core.notes where note.type == 6 {  // NT_AUXV: (type, value) pairs
            let d = NativeBytes(note.descriptor)
            for i in 0..<(note.descriptor.count / 16) where auxv[try d.u64(16 * i)] == nil {
                auxv[try d.u64(16 * i)] = try d.u64(16 * i + 8)
            }
        }
        // Where it was loaded: AT_PHDR is the address of its program headers in memory.
        let exeSegments = try segments(exe, path)
        let loads = exeSegments.filter { $0.type == 1 && $0.memsz > 0 }
        guard let first = loads.min(by: { $0.vaddr < $1.vaddr }), first.offset == 0 else {
            throw Problem("\(path): no loadable segment starts at its file's beginning")
        }
        guard let phdrInMemory = auxv[3] else {
            throw Problem("the core has no auxiliary vector (NT_AUXV with AT_PHDR): where the program was loaded is unknown")
        }
        let phoff = try exe.u64(32)
        let phdrVaddr = exeSegments.first { $0.type == 6 }?.vaddr ?? (first.vaddr &+ phoff)
        let bias = phdrInMemory &- phdrVaddr
        // The entry point and the code's mapping confirm it is a program laid out as the one that
        // ran; a core without build ids cannot tell two builds of the same layout apart.
        let entry = (try exe.u64(24)) &+ bias
        if let ran = auxv[9], ran != entry {
            throw Problem(String(format: "%@ is not the program this core is of: its entry point would be 0x%llx, the core's is 0x%llx", path, entry, ran))
        }
        for load in loads where load.flags & 1 != 0 {
            let start = (load.vaddr &+ bias) & ~(pageSize - 1)
            let end = ((load.vaddr &+ bias &+ load.memsz) &+ pageSize &- 1) & ~(pageSize - 1)
            guard core.segments.contains(where: { $0.type == 1 && $0.vaddr == start && $0.vaddr &+ $0.memsz == end }) else {
                throw Problem(String(format: "%@ is not the program this core is of: the core maps no code at 0x%llx–0x%llx", path, start, end))
            }
        }

        // NT_FILE: count, page size, (start, end, file offset in pages) per mapping, then the paths.
        var file = Data()
        func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { file.append(contentsOf: $0) } }
        u64(UInt64(loads.count))
        u64(pageSize)
        for load in loads {
            let (end, overflow) = (load.vaddr &+ bias).addingReportingOverflow(load.memsz)
            guard !overflow else { throw Problem("\(path): a segment runs past the end of the address space") }
            u64((load.vaddr &+ bias) & ~(pageSize - 1))
            u64(end)
            u64(load.offset / pageSize)
        }
        for _ in loads { file.append(contentsOf: Array(path.utf8) + [0]) }
        var note = Data()
        for value in [UInt32(5), UInt32(file.count), UInt32(0x4649_4c45)] { withUnsafeBytes(of: value.littleEndian) { note.append(contentsOf: $0) } }
        note.append(contentsOf: Array("CORE".utf8) + [0, 0, 0, 0])
        note.append(file)
        while note.count % 4 != 0 { note.append(0) }

        // The headers and the notes that lie in the first segment, as the kernel's first page has them.
        let notesEnd = exeSegments.filter { $0.type == 4 && $0.offset < first.filesz }.map { $0.offset &+ $0.filesz }.max() ?? 0
        let headerBytes = min(maxHeaderBytes, first.filesz, UInt64(exe.data.count), max(pageSize, (notesEnd &+ pageSize &- 1) & ~(pageSize - 1)))
        let headers = try exe.bytes(at: 0, count: headerBytes, "\(path) headers")

        var parts = try core.segments.map { ($0, try core.bytes($0)) }
        parts.append((Segment(type: 4, flags: 4, offset: 0, vaddr: 0, filesz: 0, memsz: 0), note))
        parts.append((Segment(type: 1, flags: 5, offset: 0, vaddr: first.vaddr &+ bias, filesz: 0, memsz: 0), headers))
        return .added(try core.written(parts))
    }

    private static func slim(_ core: CoreFile) throws -> Data {
        let arch = try ElfCoreReader.arch(machine: try core.input.u16(18))
        let stackPointers = core.notes.filter { $0.type == 1 }.compactMap { note in
            (try? ElfCoreReader.state(NativeBytes(note.descriptor), arch: arch))?.stackPointer(arch)
        }
        var parts: [(Segment, Data)] = []
        for segment in core.segments {
            guard segment.type == 1, segment.filesz > 0 else {
                // Notes whole; segments that hold no bytes cost nothing and still show the layout.
                parts.append((segment, try core.bytes(segment)))
                continue
            }
            let end = segment.vaddr &+ segment.filesz
            if let lowest = stackPointers.filter({ $0 >= segment.vaddr && $0 < end }).min() {
                // A thread's stack: from just below its pointer up, as far as the unwinder reads.
                let start = max(segment.vaddr, (lowest & ~(pageSize - 1)) &- belowStackPointer)
                let count = min(end - start, maxStackBytes)
                var kept = segment
                kept.offset = segment.offset + (start - segment.vaddr)
                kept.vaddr = start
                kept.filesz = count
                kept.memsz = count
                parts.append((kept, try core.bytes(kept)))
            } else if segment.filesz >= 4, try core.input.bytes(at: segment.offset, count: 4, "a segment").elementsEqual([0x7f, 0x45, 0x4c, 0x46]) {
                // A mapped ELF file's first page: its headers and build id.
                var kept = segment
                kept.filesz = min(segment.filesz, pageSize)
                kept.memsz = kept.filesz
                parts.append((kept, try core.bytes(kept)))
            }
        }
        return try core.written(parts)
    }
}
