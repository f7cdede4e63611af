import Foundation
import ReportModel

/// A Linux core file (ELF `ET_CORE`), as the kernel, systemd-coredump (`coredumpctl dump`) and
/// gdb's `gcore` write them: each thread's registers (`NT_PRSTATUS`), the signal (`NT_SIGINFO`),
/// the mapped files (`NT_FILE`) and the memory (`PT_LOAD`). Like a minidump it is unwound by
/// the worker (docs/native.md): the report carries each thread's context frame and the capture.
/// Each module's build id is read from its ELF header in the captured memory, which the kernel
/// dumps by default (`coredump_filter` bit 4).
public struct ElfCoreFormat: ReportFormat {
    public let id = "elf-core"

    public init() {}

    public func matches(_ data: Data) -> Bool {
        // ELF magic, 64-bit, little-endian, e_type ET_CORE (4).
        data.count >= 18 && data.prefix(4).elementsEqual([0x7f, 0x45, 0x4c, 0x46])
            && data[data.startIndex + 4] == 2 && data[data.startIndex + 5] == 1
            && data[data.startIndex + 16] == 4 && data[data.startIndex + 17] == 0
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        do {
            return try ElfCoreReader(NativeBytes(data)).report(format: id)
        } catch {
            throw .invalidReport(format: id, reason: error.description)
        }
    }
}

struct ElfCoreReader {
    let input: NativeBytes

    static let maxSegments = 100_000
    /// Notes of one PT_NOTE segment, at most (a thread has about 10).
    static let maxNotes = 100_000
    static let maxFileEntries = 100_000
    static let maxPathBytes = 4_096

    init(_ input: NativeBytes) { self.input = input }

    struct Note {
        var name: String
        var type: UInt32
        var descriptor: Data
    }

    struct FileMapping {
        var start: UInt64
        var end: UInt64
        var pageOffset: UInt64
        var path: String
    }

    /// A program header: what this reader and `ElfCoreRewriting` read of each.
    struct Segment {
        var type: UInt32
        var flags: UInt32
        var offset: UInt64
        var vaddr: UInt64
        var filesz: UInt64
        var memsz: UInt64
    }

    /// The program headers of a 64-bit little-endian ELF file, each checked against the file.
    /// `owner` names the file in messages when it is not the core itself.
    static func segments(_ file: NativeBytes, owner: String? = nil) throws(NativeProblem) -> [Segment] {
        let prefix = owner.map { "\($0): " } ?? ""
        let phoff = try file.u64(32)
        let phentsize = Int(try file.u16(54))
        let phnum = UInt64(try file.u16(56))
        guard phnum != 0xffff else { throw NativeProblem("\(prefix)more than 65,534 segments (PN_XNUM): not supported") }
        guard phentsize >= 56, phoff <= UInt64(Int.max) else { throw NativeProblem("\(prefix)program headers of \(phentsize) bytes at \(phoff)") }
        let count = try file.count(phnum, each: phentsize, from: Int(phoff), limit: maxSegments, owner.map { "\($0) program headers" } ?? "program headers")
        var segments: [Segment] = []
        segments.reserveCapacity(count)
        for i in 0..<count {
            let h = Int(phoff) + i * phentsize
            segments.append(Segment(
                type: try file.u32(h), flags: try file.u32(h + 4), offset: try file.u64(h + 8), vaddr: try file.u64(h + 16),
                filesz: try file.u64(h + 32), memsz: try file.u64(h + 40)))
        }
        return segments
    }

    /// The architecture of a core's `e_machine`: x86-64 and arm64 only.
    static func arch(machine: UInt16) throws(NativeProblem) -> Arch {
        switch machine {
        case 62: Arch(.x86_64)
        case 183: Arch(.arm64)
        default: throw NativeProblem("machine \(machine) is not x86-64 (62) or arm64 (183): not supported")
        }
    }

    func report(format: String) throws(NativeProblem) -> RawReport {
        let arch = try Self.arch(machine: try input.u16(18))
        var warnings = WarningLog()
        var regions: [MemoryRegion] = []
        var notes: [Note] = []
        for (i, segment) in try Self.segments(input).enumerated() {
            switch segment.type {
            case 1 where segment.filesz > 0:  // PT_LOAD: only the bytes the file holds were captured
                regions.append(MemoryRegion(start: segment.vaddr, bytes: try input.bytes(at: segment.offset, count: segment.filesz, "segment \(i)")))
            case 4:  // PT_NOTE
                notes += try Self.notes(try input.bytes(at: segment.offset, count: segment.filesz, "note segment \(i)"))
            default:
                continue
            }
        }
        regions.sort { $0.start < $1.start }
        var memory: [MemoryRegion] = []
        for region in regions {
            guard let end = region.end else {
                warnings.append(String(format: "memory at 0x%llx runs past the end of the address space; left out", region.start))
                continue
            }
            if let last = memory.last, let lastEnd = last.end, region.start < lastEnd {
                warnings.append(String(format: "segment 0x%llx–0x%llx overlaps 0x%llx–0x%llx; left out", region.start, end, last.start, lastEnd))
                continue
            }
            memory.append(region)
        }

        var states: [NativeThreadState] = []
        var threads: [RawThread] = []
        var signal: UInt32?
        var faultAddress: UInt64?
        var files: [FileMapping] = []
        var sawSignalInfo = false
        for note in notes where note.name == "CORE" {
            switch note.type {
            case 1:  // NT_PRSTATUS: pr_cursig at 12, pr_pid at 32, pr_reg at 112
                let d = NativeBytes(note.descriptor)
                guard let state = try? Self.state(d, arch: arch) else {
                    warnings.append("a thread's NT_PRSTATUS of \(note.descriptor.count) bytes is too short for \(arch.name); left out")
                    continue
                }
                let cursig = UInt32(try d.u16(12))
                let tid = try d.u32(32)
                // The kernel writes the thread that took the signal first.
                if signal == nil, cursig != 0 { signal = cursig }
                threads.append(RawThread(
                    index: threads.count, name: "thread \(tid)", crashed: threads.isEmpty && cursig != 0,
                    frames: state.pc == 0 ? [] : [RawFrame(address: Address(state.pc), kind: .pc, trust: .context)]))
                states.append(state)
            case 0x5349_4749 where !sawSignalInfo:
                // NT_SIGINFO: si_signo at 0, the fault address at 16. The kernel writes one, for
                // the thread that took the signal; gdb's gcore one per thread: the first counts.
                sawSignalInfo = true
                let d = NativeBytes(note.descriptor)
                if let signo = try? d.u32(0), signo != 0 {
                    signal = signo
                    if [4, 7, 8, 11].contains(signo) { faultAddress = try? d.u64(16) }
                }
            case 0x4649_4c45:  // NT_FILE
                files = try Self.fileMappings(NativeBytes(note.descriptor))
            default:
                continue
            }
        }
        guard !threads.isEmpty else { throw NativeProblem("no thread (NT_PRSTATUS note) has a usable register set") }
        let capture = NativeCapture(arch: arch, memory: memory, threads: states)

        // Modules: each mapped file from where its offset-0 mapping starts to its last mapping's end.
        // One pass for each path's last end (a hostile core may list 100,000 entries).
        var lastEnd: [String: UInt64] = [:]
        for file in files { lastEnd[file.path] = max(lastEnd[file.path] ?? file.end, file.end) }
        var images: [BinaryImage] = []
        var seen: Set<String> = []
        for file in files where file.pageOffset == 0 && file.start < file.end && !seen.contains(file.path) {
            seen.insert(file.path)
            let end = max(lastEnd[file.path] ?? file.end, file.end)
            let id = Self.buildID(at: file.start, in: capture)
            if id == nil { warnings.append("module \(ReportText.basename(file.path)): no build id in its captured ELF header") }
            images.append(BinaryImage(
                name: ReportText.basename(file.path), path: file.path, id: id, arch: arch,
                loadAddress: Address(file.start), size: end - file.start))
        }
        let signalName = signal.flatMap { LinuxSignal.names[$0] }
        return RawReport(
            format: format, kind: .crash, platform: "Linux", arch: arch,
            app: images.first.map { AppInfo(name: $0.name) },
            exception: signal.map { ExceptionInfo(type: signalName ?? "signal \($0)", signal: signalName, faultAddress: faultAddress.map { Address($0) }) },
            images: images, threads: threads, native: capture, warnings: warnings.all)
    }

    /// Every note of a PT_NOTE segment: name and descriptor sizes, each padded to 4 bytes.
    static func notes(_ segment: Data) throws(NativeProblem) -> [Note] {
        let d = NativeBytes(segment)
        var notes: [Note] = []
        var at = 0
        while at + 12 <= segment.count {
            guard notes.count < maxNotes else { throw NativeProblem("more than \(maxNotes) notes in one segment") }
            let nameSize = UInt64(try d.u32(at)), descSize = UInt64(try d.u32(at + 4)), type = try d.u32(at + 8)
            let name = try d.bytes(at: UInt64(at + 12), count: nameSize, "note name")
            let descAt = UInt64(at + 12) + ((nameSize + 3) & ~3)
            let descriptor = try d.bytes(at: descAt, count: descSize, "note \(type)")
            notes.append(Note(name: String(decoding: name.prefix { $0 != 0 }, as: UTF8.self), type: type, descriptor: descriptor))
            at = Int(descAt + ((descSize + 3) & ~3))
        }
        return notes
    }

    /// NT_FILE: count, page size, then (start, end, page offset) per entry, then the paths.
    static func fileMappings(_ d: NativeBytes) throws(NativeProblem) -> [FileMapping] {
        let n = try d.count(try d.u64(0), each: 24, from: 16, limit: maxFileEntries, "NT_FILE entries")
        let pageSize = try d.u64(8)
        // overflow: `count` checked n * 24 against the bytes after offset 16, and n ≤ maxFileEntries.
        let namesAt = 16 + 24 * n
        var names = try d.bytes(at: UInt64(namesAt), count: UInt64(d.data.count - namesAt), "NT_FILE names")
        var mappings: [FileMapping] = []
        for i in 0..<n {
            let entry = 16 + 24 * i
            guard let nul = names.firstIndex(of: 0) else { throw NativeProblem("NT_FILE: \(n) entries but \(i) paths") }
            let path = String(decoding: names[names.startIndex..<nul].prefix(maxPathBytes), as: UTF8.self)
            names = names[(nul + 1)...]
            let (offset, overflow) = try d.u64(entry + 16).multipliedReportingOverflow(by: pageSize)
            mappings.append(FileMapping(start: try d.u64(entry), end: try d.u64(entry + 8), pageOffset: overflow ? .max : offset, path: path))
        }
        return mappings
    }

    /// The registers of an NT_PRSTATUS descriptor in DWARF order (`NativeThreadState`).
    static func state(_ d: NativeBytes, arch: Arch) throws(NativeProblem) -> NativeThreadState {
        let regs = 112
        switch arch.cpu {
        case .x86_64?:
            // user_regs_struct: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp …
            func reg(_ n: Int) throws(NativeProblem) -> UInt64 { try d.u64(regs + 8 * n) }
            let dwarf = [10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0]  // rax rdx rcx rbx rsi rdi rbp rsp r8…r15
            var registers: [UInt64] = []
            for n in dwarf { registers.append(try reg(n)) }
            return NativeThreadState(pc: try reg(16), registers: registers)
        case .arm64?:
            // user_pt_regs: x0–x30, sp, pc, pstate.
            var registers: [UInt64] = []
            for n in 0..<32 { registers.append(try d.u64(regs + 8 * n)) }
            return NativeThreadState(pc: try d.u64(regs + 8 * 32), registers: registers)
        default:
            throw NativeProblem("no register layout for \(arch.name)")
        }
    }

    /// The GNU build id in the ELF image whose header the capture holds at `base`: its program
    /// headers' PT_NOTE segments, searched for `NT_GNU_BUILD_ID`.
    static func buildID(at base: UInt64, in capture: NativeCapture) -> BuildID? {
        guard let header = capture.bytes(at: base, count: 64), header.prefix(4).elementsEqual([0x7f, 0x45, 0x4c, 0x46]) else { return nil }
        let h = NativeBytes(header)
        guard let phoff = try? h.u64(32), let phentsize = try? h.u16(54), let phnum = try? h.u16(56), phentsize >= 56, phnum < 1_000 else {
            return nil
        }
        // Program headers and notes are read relative to the first mapping (vaddr of the first
        // PT_LOAD is 0 for the shared objects and PIEs this reads; ET_EXEC images give absolute ones).
        let type = try? h.u16(16)
        for i in 0..<UInt64(phnum) {
            let (entryAt, overflow) = base.addingReportingOverflow(phoff &+ i * UInt64(phentsize))
            guard !overflow, let entry = capture.bytes(at: entryAt, count: 56) else { return nil }
            let e = NativeBytes(entry)
            guard (try? e.u32(0)) == 4, let vaddr = try? e.u64(16), let size = try? e.u64(32), size < 1 << 16 else { continue }
            let address = type == 2 ? vaddr : base &+ vaddr
            guard let segment = capture.bytes(at: address, count: Int(size)), let notes = try? notes(segment) else { continue }
            if let note = notes.first(where: { $0.name == "GNU" && $0.type == 3 && !$0.descriptor.isEmpty && $0.descriptor.count <= 64 }) {
                return BuildID(bytes: note.descriptor)
            }
        }
        return nil
    }
}
