import Foundation
import ReportModel

/// A minidump (`MDMP`), as Breakpad, Crashpad and LLDB write them: the system info, the module
/// list with each module's build id (CodeView `BpEL` or `RSDS`), every thread's context and
/// stack memory, the exception, and the memory list. The threads are not unwound here: the
/// report carries each thread's context frame and the captured registers and memory
/// (`RawReport.native`), and the worker unwinds them with the stored debug files' CFI
/// (docs/native.md).
public struct MinidumpFormat: ReportFormat {
    public let id = "minidump"

    public init() {}

    static let signature: UInt32 = 0x504d_444d  // "MDMP"

    public func matches(_ data: Data) -> Bool {
        data.count >= 4 && data.prefix(4).elementsEqual([0x4d, 0x44, 0x4d, 0x50])
    }

    public func parse(_ data: Data) throws(ReportParseError) -> RawReport {
        do {
            return try MinidumpReader(data).report(format: id)
        } catch {
            throw .invalidReport(format: id, reason: error.description)
        }
    }
}

/// Reads a minidump's streams with every offset and count checked against the file: nothing
/// here trusts a size it read.
struct MinidumpReader {
    let input: NativeBytes

    /// More streams than any writer makes (Crashpad writes about 15); bounds the directory walk.
    static let maxStreams = 1_000
    /// Memory ranges (Crashpad writes a few hundred with indirectly referenced memory).
    static let maxMemoryRanges = 100_000
    /// A module path, in bytes of UTF-16.
    static let maxNameBytes = 8_192
    /// The smallest contexts that hold what the unwinder reads (rip at 248, pc at 264).
    static let amd64ContextBytes = 256
    static let arm64ContextBytes = 272

    enum StreamType: UInt32 {
        case threadList = 3, moduleList = 4, memoryList = 5, exception = 6, systemInfo = 7, memory64List = 9, threadNames = 24
        /// Breakpad's copy of `/proc/PID/maps` (Crashpad and LLDB write it too).
        case linuxMaps = 0x4767_0009
    }
    /// The largest `/proc/PID/maps` copy read (a process with thousands of mappings is well under).
    static let maxMapsBytes = 4 << 20

    init(_ data: Data) { input = NativeBytes(data) }

    /// A MINIDUMP_STRING: a byte length, then UTF-16LE.
    func string(at rva: UInt32, _ what: String) throws(NativeProblem) -> String {
        let length = try input.u32(Int(rva))
        guard length <= Self.maxNameBytes else { throw NativeProblem("\(what): a \(length)-byte name, more than \(Self.maxNameBytes)") }
        let raw = try input.bytes(at: UInt64(rva) + 4, count: UInt64(length & ~1), what)
        var units: [UInt16] = []
        units.reserveCapacity(raw.count / 2)
        var i = raw.startIndex
        while i + 1 < raw.endIndex {
            units.append(UInt16(raw[i]) | UInt16(raw[i + 1]) << 8)
            i += 2
        }
        return String(decoding: units, as: UTF16.self)
    }

    // MARK: Streams

    /// The directory: each stream type's first (size, offset). A type listed twice keeps its first.
    func streams() throws(NativeProblem) -> [UInt32: (size: UInt32, rva: UInt32)] {
        guard try input.u32(0) == MinidumpFormat.signature else { throw NativeProblem("no MDMP signature") }
        let version = try input.u32(4) & 0xffff
        guard version == 0xa793 else { throw NativeProblem(String(format: "version 0x%04x is not a minidump's (0xa793)", version)) }
        let directory = Int(try input.u32(12))
        let n = try input.count(UInt64(try input.u32(8)), each: 12, from: directory, limit: Self.maxStreams, "stream directory")
        var found: [UInt32: (UInt32, UInt32)] = [:]
        for i in 0..<n {
            let entry = directory + 12 * i
            let type = try input.u32(entry)
            if found[type] == nil { found[type] = (try input.u32(entry + 4), try input.u32(entry + 8)) }
        }
        return found
    }

    struct Module {
        var base: UInt64
        var size: UInt32
        var path: String
        var buildID: BuildID?
    }

    func modules(_ stream: (size: UInt32, rva: UInt32)) throws(NativeProblem) -> [Module] {
        let start = Int(stream.rva)
        let n = try input.count(UInt64(try input.u32(start)), each: 108, from: start + 4, limit: ReportLimits.maxImages, "module list")
        return try (0..<n).map { i throws(NativeProblem) in
            let m = start + 4 + 108 * i
            let path = try string(at: try input.u32(m + 20), "module \(i) name")
            let cvSize = try input.u32(m + 24 + 52)
            let cvRVA = try input.u32(m + 24 + 52 + 4)
            return Module(
                base: try input.u64(m), size: try input.u32(m + 8), path: path,
                buildID: cvSize == 0 ? nil : try codeViewID(input.bytes(at: UInt64(cvRVA), count: UInt64(cvSize), "module \(i) CodeView record")))
        }
    }

    /// `BpEL` + the ELF build id (Breakpad, Crashpad, LLDB); `RSDS` + GUID + age (PE, and
    /// Crashpad's Mach-O UUIDs in the GUID): the GUID's bytes as the UUID.
    func codeViewID(_ record: Data) throws(NativeProblem) -> BuildID? {
        guard record.count >= 4 else { return nil }
        let signature = record.prefix(4)
        if signature.elementsEqual("BpEL".utf8.reversed()) || signature.elementsEqual("BpEL".utf8) {
            let id = record.dropFirst(4)
            return id.isEmpty || id.count > 64 ? nil : BuildID(bytes: id)
        }
        if signature.elementsEqual("RSDS".utf8), record.count >= 24 {
            return BuildID(bytes: NativeBytes.guidInByteOrder(Array(record[record.startIndex + 4..<record.startIndex + 20])))
        }
        return nil
    }

    struct Thread {
        var id: UInt32
        var stack: (start: UInt64, size: UInt32, rva: UInt32)
        var context: Data
    }

    func threads(_ stream: (size: UInt32, rva: UInt32)) throws(NativeProblem) -> [Thread] {
        let start = Int(stream.rva)
        let n = try input.count(UInt64(try input.u32(start)), each: 48, from: start + 4, limit: ReportLimits.maxThreads, "thread list")
        return try (0..<n).map { i throws(NativeProblem) in
            let t = start + 4 + 48 * i
            let contextSize = try input.u32(t + 40)
            return Thread(
                id: try input.u32(t), stack: (try input.u64(t + 24), try input.u32(t + 32), try input.u32(t + 36)),
                context: try input.bytes(at: UInt64(try input.u32(t + 44)), count: UInt64(contextSize), "thread \(i) context"))
        }
    }

    /// The threads' stacks, the memory list and the Memory64 list, sorted and disjoint. A range
    /// listed again alike is one; a range that overlaps one listed before it otherwise is left
    /// out with a warning (one of them lies, and a thread's own stack copy is believed first).
    func memory(_ streams: [UInt32: (size: UInt32, rva: UInt32)], threads: [Thread], warnings: inout WarningLog) throws(NativeProblem) -> [MemoryRegion] {
        // (region, rank): thread stacks rank 0, listed memory 1, so the sort puts a stack first.
        var regions: [(region: MemoryRegion, rank: Int)] = []
        for (i, thread) in threads.enumerated() where thread.stack.size > 0 {
            regions.append((MemoryRegion(
                start: thread.stack.start,
                bytes: try input.bytes(at: UInt64(thread.stack.rva), count: UInt64(thread.stack.size), "thread \(i) stack")), 0))
        }
        if let list = streams[StreamType.memoryList.rawValue] {
            let start = Int(list.rva)
            let n = try input.count(UInt64(try input.u32(start)), each: 16, from: start + 4, limit: Self.maxMemoryRanges, "memory list")
            for i in 0..<n {
                let d = start + 4 + 16 * i
                regions.append((MemoryRegion(
                    start: try input.u64(d), bytes: try input.bytes(at: UInt64(try input.u32(d + 12)), count: UInt64(try input.u32(d + 8)), "memory range \(i)")), 1))
            }
        }
        if let list = streams[StreamType.memory64List.rawValue] {
            let start = Int(list.rva)
            let n = try input.count(try input.u64(start), each: 16, from: start + 16, limit: Self.maxMemoryRanges, "memory64 list")
            var rva = try input.u64(start + 8)
            for i in 0..<n {
                let d = start + 16 + 16 * i
                let size = try input.u64(d + 8)
                regions.append((MemoryRegion(start: try input.u64(d), bytes: try input.bytes(at: rva, count: size, "memory64 range \(i)")), 1))
                let (next, overflow) = rva.addingReportingOverflow(size)
                guard !overflow else { throw NativeProblem("memory64 range \(i): its offset passes 2^64") }
                rva = next
            }
        }
        regions.sort { ($0.region.start, $0.rank, $0.region.bytes.count) < ($1.region.start, $1.rank, $1.region.bytes.count) }
        var kept: [MemoryRegion] = []
        for (region, _) in regions where !region.bytes.isEmpty {
            guard let end = region.end else {
                warnings.append(String(format: "memory at 0x%llx runs past the end of the address space; left out", region.start))
                continue
            }
            if let last = kept.last, let lastEnd = last.end, region.start < lastEnd {
                if region.start == last.start, region.bytes == last.bytes { continue }
                warnings.append(String(
                    format: "memory 0x%llx–0x%llx overlaps 0x%llx–0x%llx with other contents; left out", region.start, end, last.start, lastEnd))
                continue
            }
            kept.append(region)
        }
        return kept
    }

    /// The thread names list (MINIDUMP_THREAD_NAME: a thread id, then a 64-bit offset of its
    /// name), by thread id.
    func threadNames(_ stream: (size: UInt32, rva: UInt32)) throws(NativeProblem) -> [UInt32: String] {
        let start = Int(stream.rva)
        let n = try input.count(UInt64(try input.u32(start)), each: 12, from: start + 4, limit: ReportLimits.maxThreads, "thread names")
        var names: [UInt32: String] = [:]
        for i in 0..<n {
            let entry = start + 4 + 12 * i
            guard let rva = UInt32(exactly: try input.u64(entry + 4)) else { continue }
            let name = try string(at: rva, "thread name \(i)")
            if DeviceInfo.isKept(name) { names[try input.u32(entry)] = name }
        }
        return names
    }

    /// Per file path in `/proc/PID/maps`, the lowest start and highest end of its mappings.
    func mappedExtents(_ stream: (size: UInt32, rva: UInt32)) throws(NativeProblem) -> [String: (start: UInt64, end: UInt64)] {
        guard Int(stream.size) <= Self.maxMapsBytes else { return [:] }
        let text = String(decoding: try input.bytes(at: UInt64(stream.rva), count: UInt64(stream.size), "Linux maps"), as: UTF8.self)
        var extents: [String: (start: UInt64, end: UInt64)] = [:]
        for line in text.split(separator: "\n") {
            // start-end perms offset dev inode path
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6, let dash = fields[0].firstIndex(of: "-"),
                let start = UInt64(fields[0][..<dash], radix: 16), let end = UInt64(fields[0][fields[0].index(after: dash)...], radix: 16),
                start < end
            else { continue }
            let path = String(fields[5]).trimmingWhitespace()
            guard path.hasPrefix("/") else { continue }
            let known = extents[path]
            extents[path] = (min(known?.start ?? start, start), max(known?.end ?? end, end))
        }
        return extents
    }

    // MARK: The report

    func report(format: String) throws(NativeProblem) -> RawReport {
        let streams = try streams()
        guard let systemInfo = streams[StreamType.systemInfo.rawValue] else { throw NativeProblem("no system info stream") }
        let architecture = try input.u16(Int(systemInfo.rva))
        // MINIDUMP_SYSTEM_INFO: PlatformId at 20, CSDVersionRva (the OS version) at 24.
        let platform = try input.u32(Int(systemInfo.rva) + 20)
        let arch: Arch
        switch architecture {
        case 9: arch = Arch(.x86_64)
        case 12, 0x8003: arch = Arch(.arm64)
        default: throw NativeProblem("processor architecture \(architecture) is not x86-64 (9) or arm64 (12): not supported")
        }
        // The OS as rust-minidump and Breakpad print it: the platform, the version numbers (major
        // at 8, minor at 12, build at 16), and the service-pack string, which on Linux holds the
        // rest of the kernel's version.
        let servicePack = (try? string(at: try input.u32(Int(systemInfo.rva) + 24), "OS version")) ?? ""
        let numbers = "\(try input.u32(Int(systemInfo.rva) + 8)).\(try input.u32(Int(systemInfo.rva) + 12)).\(try input.u32(Int(systemInfo.rva) + 16))"
        let osVersion = [Self.platforms[platform], numbers == "0.0.0" ? nil : numbers, servicePack.isEmpty ? nil : servicePack]
            .compactMap { $0 }.joined(separator: " ")

        var warnings = WarningLog()
        let modules = try streams[StreamType.moduleList.rawValue].map(modules) ?? []
        // Each mapped file's extent by its lowest address: a module is known by where it starts,
        // since its listed path may be another name of the file (/lib → /usr/lib).
        let extents = Dictionary(
            (try streams[StreamType.linuxMaps.rawValue].map(mappedExtents) ?? [:]).values.map { ($0.start, $0.end) },
            uniquingKeysWith: max)
        let images = modules.map { module in
            // The process's own map says how far a module reaches; LLDB's module sizes do not.
            let mapped = extents[module.base].map { $0 - module.base }
            return BinaryImage(
                name: ReportText.basename(module.path), path: module.path, id: module.buildID, arch: arch,
                loadAddress: Address(module.base), size: mapped ?? (module.size == 0 ? nil : UInt64(module.size)))
        }
        for (module, image) in zip(modules, images) where module.buildID == nil {
            warnings.append("module \(image.name) has no build id in its CodeView record: its frames cannot be symbolicated")
        }
        guard let threadList = streams[StreamType.threadList.rawValue] else { throw NativeProblem("no thread list stream") }
        let threads = try threads(threadList)
        let memory = try memory(streams, threads: threads, warnings: &warnings)

        var crashedThread: UInt32?
        var crashContext: Data?
        var exception: ExceptionInfo?
        if let stream = streams[StreamType.exception.rawValue] {
            let e = Int(stream.rva)
            crashedThread = try input.u32(e)
            // The crashed thread's registers at the crash (MINIDUMP_EXCEPTION_STREAM's
            // ThreadContext at 160): Crashpad's thread list holds that thread as its handler
            // found it, inside the signal handler, not where it crashed.
            if stream.size >= 168, try input.u32(e + 160) > 0 {
                crashContext = try input.bytes(at: UInt64(try input.u32(e + 164)), count: UInt64(try input.u32(e + 160)), "exception context")
            }
            let code = try input.u32(e + 8)
            let flags = try input.u32(e + 12)
            let address = try input.u64(e + 24)
            let linux = platform == 0x8201 || platform == 0x8203
            let signal = linux ? LinuxSignal.names[code] : nil
            exception = ExceptionInfo(
                type: signal ?? String(format: "0x%08x", code), signal: signal,
                code: linux ? "si_code \(Int32(bitPattern: flags))" : String(format: "0x%08x", flags), faultAddress: Address(address))
        }

        var names: [UInt32: String] = [:]
        do { names = try streams[StreamType.threadNames.rawValue].map(threadNames) ?? [:] } catch {
            warnings.append("thread names: \(error.description); left out")
        }
        var rawThreads: [RawThread] = []
        var states: [NativeThreadState] = []
        for (i, thread) in threads.enumerated() {
            let crashed = thread.id == crashedThread
            guard let state = (crashed ? crashContext.flatMap { Self.state($0, arch: arch) } : nil) ?? Self.state(thread.context, arch: arch) else {
                warnings.append("thread \(thread.id): its \(thread.context.count)-byte context is too short for \(arch.name); left out")
                continue
            }
            let frames = state.pc == 0 ? [] : [RawFrame(address: Address(state.pc), kind: .pc, trust: .context)]
            let name = names[thread.id].map { "\($0) (thread \(thread.id))" } ?? "thread \(thread.id)"
            rawThreads.append(RawThread(index: i, name: name, crashed: crashed, frames: frames))
            states.append(state)
        }
        guard !rawThreads.isEmpty else { throw NativeProblem("no thread has a usable context") }
        var crashpad: CrashpadInfo?
        if let stream = streams[CrashpadInfo.streamType] {
            do {
                crashpad = try CrashpadInfo(input, stream: stream, moduleNames: images.map(\.name))
                if let dropped = crashpad?.dropped, dropped > 0 {
                    warnings.append("Crashpad annotations: \(dropped) not kept (over \(CrashpadInfo.maxAnnotations), too long, or not text)")
                }
            } catch {
                warnings.append("Crashpad annotations: \(error.description); left out")
            }
        }
        let app = crashpad?.app ?? modules.first.map { AppInfo(name: ReportText.basename($0.path)) }
        return RawReport(
            format: format, kind: .crash, platform: Self.platforms[platform], arch: arch,
            app: app, os: osVersion.isEmpty ? nil : osVersion,
            device: DeviceInfo(model: nil, osVersion: nil, id: crashpad?.clientID),
            exception: exception, images: images, threads: rawThreads,
            native: NativeCapture(arch: arch, memory: memory, threads: states),
            annotations: crashpad.flatMap { $0.annotations.isEmpty ? nil : $0.annotations }, warnings: warnings.all)
    }

    /// Registers in DWARF order from a context (`NativeThreadState`); nil when it is too short.
    static func state(_ context: Data, arch: Arch) -> NativeThreadState? {
        func word(_ offset: Int) -> UInt64 {
            var value: UInt64 = 0
            for i in 0..<8 { value |= UInt64(context[context.startIndex + offset + i]) << (8 * UInt64(i)) }
            return value
        }
        switch arch.cpu {
        case .x86_64?:
            guard context.count >= amd64ContextBytes else { return nil }
            // MINIDUMP_CONTEXT_AMD64: rax 120, rcx 128, rdx 136, rbx 144, rsp 152, rbp 160, rsi 168, rdi 176, r8–r15 184…, rip 248.
            let dwarf = [120, 136, 128, 144, 168, 176, 160, 152] + (0..<8).map { 184 + 8 * $0 }
            return NativeThreadState(pc: word(248), registers: dwarf.map(word))
        case .arm64?:
            guard context.count >= arm64ContextBytes else { return nil }
            // x0–x30 from 8, sp 256, pc 264 (Windows' CONTEXT_ARM64 and Breakpad's old layout alike).
            return NativeThreadState(pc: word(264), registers: (0..<31).map { word(8 + 8 * $0) } + [word(256)])
        default:
            return nil
        }
    }

    static let platforms: [UInt32: String] = [0x8201: "Linux", 0x8203: "Android", 0x8101: "macOS", 0x8102: "iOS", 2: "Windows"]

}
