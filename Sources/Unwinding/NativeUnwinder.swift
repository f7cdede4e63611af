import CElfUtils
import Foundation
import ReportModel

/// Where a native crash's stacks are walked (docs/native.md): each thread of a `NativeCapture`
/// from its captured registers, through elfutils' unwinder (libdwfl) with this process's own
/// thread callbacks, which read registers and memory from the capture. libdwfl takes each
/// caller from the call-frame information of the module the frame's code is in, and on x86-64
/// and arm64 falls back to the frame-pointer chain where there is none. A thread that gets no
/// further than its context frame is then scanned: stack words that point into a module's code.
///
/// One unwind at a time per process (`lock`): libdwfl's `set_initial_registers` gets no
/// context pointer, so the session it serves is a process-wide `Session.current`. A worker
/// handles one job at a time anyway.
public struct NativeUnwinder {
    private static let lock = NSLock()

    /// A module the unwinder may read: the image's index in the report, and an open descriptor
    /// of its ELF file (the executable, whose `.eh_frame` the unwinder needs, or else the debug
    /// file). The unwinder takes ownership of the descriptor.
    public struct ModuleFile {
        public var imageIndex: Int
        public var descriptor: Int32
        public init(imageIndex: Int, descriptor: Int32) {
            self.imageIndex = imageIndex
            self.descriptor = descriptor
        }
    }

    /// Frames per thread, at most: past it the walk stops with a warning (a loop in a lying stack).
    public static let maxFrames = 1_024
    /// Stack words a scan reads, at most.
    public static let maxScanWords = 4_096
    /// Frames a scan adds, at most.
    public static let maxScanFrames = 64

    public init() {}

    /// Each thread's frames (the context frame first), in `capture.threads` order, and what the
    /// walk noticed.
    public func unwind(_ capture: NativeCapture, images: [BinaryImage], files: [ModuleFile]) -> (threads: [[RawFrame]], warnings: [String]) {
        Self.lock.lock()
        defer { Self.lock.unlock() }
        var warnings: [String] = []
        let session = Session(capture: capture)
        defer { session.close() }
        let reported = session.report(images: images, files: files, warnings: &warnings)
        var threads: [[RawFrame]] = []
        // Every thread's frames together stay within what a report may hold (ReportLimits): each
        // thread keeps its context frame, and the walks share what is left.
        var budget = ReportLimits.maxFrames - capture.threads.count
        for (index, state) in capture.threads.enumerated() {
            let context = RawFrame(address: Address(state.pc), kind: .pc, trust: .context)
            guard budget > 0 else {
                threads.append([context])
                continue
            }
            var frames = reported ? session.walk(thread: index, limit: min(Self.maxFrames, budget + 1), warnings: &warnings) : []
            if frames.isEmpty { frames = [context] }
            if frames.count == 1 {
                frames += session.scan(state, arch: capture.arch, images: images).prefix(budget)
            }
            budget -= frames.count - 1
            threads.append(frames)
        }
        if budget <= 0 {
            warnings.append("the walks stopped at \(ReportLimits.maxFrames) frames in all, the most a report holds")
        }
        return (threads, warnings)
    }
}

/// One libdwfl session over one capture. `Dwfl` and its callbacks reach the capture through
/// `dwfl_arg`, an unretained pointer to this object, which outlives the `Dwfl` (`close`).
final class Session {
    let capture: NativeCapture
    private var dwfl: OpaquePointer?
    /// libdwfl keeps pointers to both callback tables for the life of the `Dwfl`: they live
    /// here, allocated once, until `close`.
    private let offline = UnsafeMutablePointer<Dwfl_Callbacks>.allocate(capacity: 1)
    private let threadCallbacks = UnsafeMutablePointer<Dwfl_Thread_Callbacks>.allocate(capacity: 1)

    /// The thread argument libdwfl hands back to `set_initial_registers` is the thread's index
    /// + 1 (never NULL); the thread ids it sees are the same numbers, not the capture's own
    /// (which a hostile file could repeat or zero).
    private static let threadTable = Dwfl_Thread_Callbacks(
        next_thread: { _, arg, threadArg in
            guard let arg, let threadArg else { return -1 }
            let session = Unmanaged<Session>.fromOpaque(arg).takeUnretainedValue()
            let next = Int(bitPattern: threadArg.pointee)
            guard next < session.capture.threads.count else { return 0 }
            threadArg.pointee = UnsafeMutableRawPointer(bitPattern: next + 1)
            return pid_t(next + 1)
        },
        get_thread: { _, tid, arg, threadArg in
            guard let arg, let threadArg else { return false }
            let session = Unmanaged<Session>.fromOpaque(arg).takeUnretainedValue()
            guard tid >= 1, Int(tid) <= session.capture.threads.count else { return false }
            threadArg.pointee = UnsafeMutableRawPointer(bitPattern: Int(tid))
            return true
        },
        memory_read: { _, address, result, arg in
            guard let arg, let result else { return false }
            let session = Unmanaged<Session>.fromOpaque(arg).takeUnretainedValue()
            guard let word = session.capture.word(at: address) else { return false }
            result.pointee = word
            return true
        },
        set_initial_registers: { thread, threadArg in
            let index = Int(bitPattern: threadArg) - 1
            guard let thread, let session = Session.current, index >= 0, index < session.capture.threads.count else { return false }
            let state = session.capture.threads[index]
            let ok = state.registers.withUnsafeBufferPointer { registers in
                registers.isEmpty || dwfl_thread_state_registers(thread, 0, UInt32(registers.count), registers.baseAddress!)
            }
            dwfl_thread_state_register_pc(thread, state.pc)
            return ok
        },
        detach: nil, thread_detach: nil)

    /// The session whose walk is running: `set_initial_registers` receives only the thread's
    /// argument, not `dwfl_arg`. Set for the length of one `dwfl_getthread_frames` call.
    nonisolated(unsafe) static var current: Session?

    /// Module index ranges, for the trust of each frame and for scans.
    private var modules: [(imageIndex: Int, module: OpaquePointer)] = []

    init(capture: NativeCapture) {
        self.capture = capture
        offline.initialize(to: Dwfl_Callbacks(
            find_elf: nil,
            // No search of this machine's debug directories: what the store holds is what counts.
            find_debuginfo: { _, _, _, _, _, _, _, _ in -1 },
            section_address: nil, debuginfo_path: nil))
        threadCallbacks.initialize(to: Self.threadTable)
    }

    func close() {
        if let dwfl { dwfl_end(dwfl) }
        dwfl = nil
        offline.deallocate()
        threadCallbacks.deallocate()
    }

    /// Reports every module with a file at its load address; false when none could be (the
    /// walk then has no architecture to unwind with, and the threads are scanned).
    func report(images: [BinaryImage], files: [NativeUnwinder.ModuleFile], warnings: inout [String]) -> Bool {
        guard let dwfl = dwfl_begin(offline) else {
            for file in files { Foundation.close(file.descriptor) }
            warnings.append("unwinder: \(String(cString: dwfl_errmsg(-1)))")
            return false
        }
        self.dwfl = dwfl
        dwfl_report_begin(dwfl)
        for file in files {
            guard images.indices.contains(file.imageIndex) else {
                Foundation.close(file.descriptor)
                continue
            }
            let image = images[file.imageIndex]
            // An ET_DYN file is placed at its load address (first PT_LOAD at vaddr 0, as every
            // non-prelinked library and PIE has); ET_EXEC files place themselves.
            if let module = dwfl_report_elf(dwfl, image.name, image.path ?? image.name, file.descriptor, image.loadAddress.value, false) {
                modules.append((file.imageIndex, module))
            } else {
                Foundation.close(file.descriptor)
                warnings.append("unwinder: \(image.name) could not be read for its call-frame information: \(String(cString: dwfl_errmsg(-1)))")
            }
        }
        dwfl_report_end(dwfl, nil, nil)
        guard !modules.isEmpty else { return false }
        let attached = dwfl_attach_state(dwfl, nil, 1, threadCallbacks, Unmanaged.passUnretained(self).toOpaque())
        if !attached { warnings.append("unwinder: \(String(cString: dwfl_errmsg(-1)))") }
        return attached
    }

    /// The frames of thread `index` as libdwfl walks them; empty when the walk cannot start.
    func walk(thread index: Int, limit: Int, warnings: inout [String]) -> [RawFrame] {
        guard let dwfl else { return [] }
        final class Collected {
            var pcs: [(pc: UInt64, activation: Bool)] = []
            var truncated = false
            let limit: Int
            init(limit: Int) { self.limit = limit }
        }
        let collected = Collected(limit: max(1, limit))
        Session.current = self
        defer { Session.current = nil }
        let result = dwfl_getthread_frames(dwfl, pid_t(index + 1), { frame, arg in
            guard let frame, let arg else { return Int32(DWARF_CB_ABORT) }
            let collected = Unmanaged<Collected>.fromOpaque(arg).takeUnretainedValue()
            var pc: Dwarf_Addr = 0
            var activation = false
            guard dwfl_frame_pc(frame, &pc, &activation) else { return Int32(DWARF_CB_ABORT) }
            // A return address of 0 ends a stack (the outermost frame's caller).
            if pc == 0 { return Int32(DWARF_CB_ABORT) }
            collected.pcs.append((pc, activation))
            if collected.pcs.count >= collected.limit {
                collected.truncated = true
                return Int32(DWARF_CB_ABORT)
            }
            return Int32(DWARF_CB_OK)
        }, Unmanaged.passUnretained(collected).toOpaque())
        if collected.truncated {
            warnings.append("thread \(index): the walk stopped at \(collected.limit) frames")
        } else if result != 0, collected.pcs.count > 0 {
            // A walk that reaches the outermost frame ends without an error; this one could not.
            warnings.append("thread \(index): the walk stopped after \(collected.pcs.count) frames: \(String(cString: dwfl_errmsg(-1)))")
        }
        return collected.pcs.enumerated().map { position, frame in
            if position == 0 { return RawFrame(address: Address(frame.pc), kind: .pc, trust: .context) }
            // The caller was found from the callee's CFI when its module has some for the
            // callee's code (a return address is looked up at its call instruction).
            let callee = collected.pcs[position - 1]
            let trust: FrameTrust = hasCFI(at: callee.activation ? callee.pc : callee.pc &- 1) ? .cfi : .framePointer
            return RawFrame(address: Address(frame.pc), kind: frame.activation ? .pc : .returnAddress, trust: trust)
        }
    }

    private func hasCFI(at pc: UInt64) -> Bool {
        guard let dwfl, let module = dwfl_addrmodule(dwfl, pc) else { return false }
        var bias: Dwarf_Addr = 0
        var cfiFrame: OpaquePointer?
        if let cfi = dwfl_module_eh_cfi(module, &bias), dwarf_cfi_addrframe(cfi, pc &- bias, &cfiFrame) == 0 {
            free(UnsafeMutableRawPointer(cfiFrame))
            return true
        }
        if let cfi = dwfl_module_dwarf_cfi(module, &bias), dwarf_cfi_addrframe(cfi, pc &- bias, &cfiFrame) == 0 {
            free(UnsafeMutableRawPointer(cfiFrame))
            return true
        }
        return false
    }

    /// Stack words from the stack pointer up that point into a reported module's code.
    func scan(_ state: NativeThreadState, arch: Arch, images: [BinaryImage]) -> [RawFrame] {
        let sp: UInt64?
        switch arch.cpu {
        case .x86_64?: sp = state.registers.count > 7 ? state.registers[7] : nil
        case .arm64?: sp = state.registers.count > 31 ? state.registers[31] : nil
        default: sp = nil
        }
        guard let sp, let dwfl else { return [] }
        var frames: [RawFrame] = []
        var address = sp
        for _ in 0..<NativeUnwinder.maxScanWords {
            guard let word = capture.word(at: address) else { break }
            if word != 0, isCode(word, dwfl) {
                frames.append(RawFrame(address: Address(word), kind: .returnAddress, trust: .scan))
                if frames.count >= NativeUnwinder.maxScanFrames { break }
            }
            let (next, overflow) = address.addingReportingOverflow(8)
            if overflow { break }
            address = next
        }
        return frames
    }

    /// Whether `address` lies in an executable segment of a reported module.
    private func isCode(_ address: UInt64, _ dwfl: OpaquePointer) -> Bool {
        guard let module = dwfl_addrmodule(dwfl, address) else { return false }
        var bias: GElf_Addr = 0
        guard let elf = dwfl_module_getelf(module, &bias) else { return false }
        var count = 0
        guard elf_getphdrnum(elf, &count) == 0 else { return false }
        for i in 0..<count {
            var header = GElf_Phdr()
            guard gelf_getphdr(elf, Int32(i), &header) != nil, header.p_type == PT_LOAD, header.p_flags & UInt32(PF_X) != 0 else { continue }
            let start = header.p_vaddr &+ bias
            if address >= start, address - start < header.p_memsz { return true }
        }
        return false
    }
}
