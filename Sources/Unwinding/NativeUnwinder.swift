import CElfUtils
import Foundation
import ReportModel

/// Where a native crash's stacks are walked (docs/native.md): each thread of a `NativeCapture`
/// from its captured registers, through elfutils' unwinder (libdwfl) with this process's own
/// thread callbacks, which read registers and memory from the capture. libdwfl takes each
/// caller from the call-frame information of the module the frame's code is in, and on x86-64
/// and arm64 falls back to the frame-pointer chain where there is none. Where it cannot go on,
/// the stack is scanned for the next return address and the walk resumes there (`Session`).
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
    /// Stack words one scan reads, at most: more from the context frame, whose caller may be a
    /// whole frame of a module without a file away, than between walked frames.
    public static let contextScanWords = 4_096
    public static let frameScanWords = 512
    /// Scans per thread, at most (each adds one frame).
    public static let maxScans = 64

    public init() {}

    /// Each thread's frames (the context frame first), in `capture.threads` order, and what the
    /// walk noticed.
    public func unwind(_ capture: NativeCapture, images: [BinaryImage], files: [ModuleFile]) -> (threads: [[RawFrame]], warnings: [String]) {
        Self.lock.lock()
        defer { Self.lock.unlock() }
        var warnings: [String] = []
        let session = Session(capture: capture, images: images)
        defer { session.close() }
        session.report(files: files, warnings: &warnings)
        var threads: [[RawFrame]] = []
        // Every thread's frames together stay within what a report may hold (ReportLimits): each
        // thread keeps its context frame, and the walks share what is left.
        var budget = ReportLimits.maxFrames - capture.threads.count
        for index in capture.threads.indices {
            guard budget > 0 else {
                threads.append([RawFrame(address: Address(capture.threads[index].pc), kind: .pc, trust: .context)])
                continue
            }
            let frames = session.walk(thread: index, limit: min(Self.maxFrames, budget + 1), warnings: &warnings)
            budget -= frames.count - 1
            threads.append(frames)
        }
        if budget <= 0 {
            warnings.append("the walks stopped at \(ReportLimits.maxFrames) frames in all, the most a report holds")
        }
        return (threads, warnings)
    }
}

/// Where one stretch of a walk starts: a captured thread's registers, or the caller a stack
/// scan found, with the registers known there (nil: not known).
struct WalkStart {
    var pc: UInt64
    var registers: [UInt64?]
}

/// A frame as libdwfl gave it, with the registers it recovered for it.
struct WalkedFrame {
    var pc: UInt64
    var activation: Bool
    var registers: [UInt64?]
    var trust: FrameTrust
}

/// The DWARF register numbers the walk itself reads, per architecture.
struct RegisterLayout {
    var count: Int
    var stackPointer: Int
    var framePointer: Int

    init?(_ arch: Arch) {
        guard let layout = NativeThreadState.layout(arch) else { return nil }
        (count, stackPointer, framePointer) = layout
    }
}

/// One libdwfl session over one capture. `Dwfl` and its callbacks reach the capture through
/// `dwfl_arg`, an unretained pointer to this object, which outlives the `Dwfl` (`close`).
///
/// A thread is walked in stretches, as Breakpad's and rust-minidump's stackwalkers go frame by
/// frame: libdwfl takes each caller from CFI, or from the frame-pointer chain where the code has
/// none, until it cannot go on or the caller it finds is not plausible (outside every module, or
/// a frame-pointer step that does not climb the stack). The stack is then scanned from the last
/// good frame for a word that points into a module's code; that word is taken as the next caller,
/// and libdwfl walks on from there as if the thread had stopped just before it returned.
final class Session {
    let capture: NativeCapture
    let images: [BinaryImage]
    let layout: RegisterLayout?
    private var dwfl: OpaquePointer?
    private var attached = false
    /// libdwfl keeps pointers to both callback tables for the life of the `Dwfl`: they live
    /// here, allocated once, until `close`.
    private let offline = UnsafeMutablePointer<Dwfl_Callbacks>.allocate(capacity: 1)
    private let threadCallbacks = UnsafeMutablePointer<Dwfl_Thread_Callbacks>.allocate(capacity: 1)
    /// Every stretch's start: the captured threads first (thread index i is libdwfl's thread
    /// i + 1), then the scans' continuations as they are found.
    private var starts: [WalkStart]
    /// Reported images (those with a file), by index into `images`.
    private var reported: Set<Int> = []
    /// Finds the image an address falls in (a scan asks for every stack word).
    private let locator: ImageLocator

    /// The thread argument libdwfl hands back to `set_initial_registers` is the start's index
    /// + 1 (never NULL); the thread ids it sees are the same numbers, not the capture's own
    /// (which a hostile file could repeat or zero). Only captured threads are listed; the
    /// continuations are reached by id alone.
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
            guard tid >= 1, Int(tid) <= session.starts.count else { return false }
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
            guard let thread, let session = Session.current, index >= 0, index < session.starts.count else { return false }
            let start = session.starts[index]
            for (number, value) in start.registers.enumerated() {
                guard var value else { continue }
                guard dwfl_thread_state_registers(thread, Int32(number), 1, &value) else { return false }
            }
            dwfl_thread_state_register_pc(thread, start.pc)
            return true
        },
        detach: nil, thread_detach: nil)

    /// The session whose walk is running: `set_initial_registers` receives only the thread's
    /// argument, not `dwfl_arg`. Set for the length of one `dwfl_getthread_frames` call.
    nonisolated(unsafe) static var current: Session?

    init(capture: NativeCapture, images: [BinaryImage]) {
        self.capture = capture
        self.images = images
        self.layout = RegisterLayout(capture.arch)
        self.locator = ImageLocator(images: images)
        self.starts = capture.threads.map { WalkStart(pc: $0.pc, registers: $0.registers.map(Optional.some)) }
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

    /// Reports every module with a file at its load address. With none, libdwfl has no
    /// architecture to unwind with, and the threads are walked by frame pointers and scans.
    func report(files: [NativeUnwinder.ModuleFile], warnings: inout [String]) {
        guard let dwfl = dwfl_begin(offline) else {
            for file in files { Foundation.close(file.descriptor) }
            warnings.append("unwinder: \(String(cString: dwfl_errmsg(-1)))")
            return
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
            if dwfl_report_elf(dwfl, image.name, image.path ?? image.name, file.descriptor, image.loadAddress.value, false) != nil {
                reported.insert(file.imageIndex)
            } else {
                Foundation.close(file.descriptor)
                warnings.append("unwinder: \(image.name) could not be read for its call-frame information: \(String(cString: dwfl_errmsg(-1)))")
            }
        }
        dwfl_report_end(dwfl, nil, nil)
        guard !reported.isEmpty else { return }
        attached = dwfl_attach_state(dwfl, nil, 1, threadCallbacks, Unmanaged.passUnretained(self).toOpaque())
        if !attached { warnings.append("unwinder: \(String(cString: dwfl_errmsg(-1)))") }
    }

    /// Thread `index`'s frames, the context frame first: libdwfl's stretches joined by scans.
    func walk(thread index: Int, limit: Int, warnings: inout [String]) -> [RawFrame] {
        var frames: [RawFrame] = []
        var start = index
        var scans = 0
        var stopped: String?
        while true {
            let (stretch, outcome) = self.stretch(from: start, limit: limit - frames.count + (start == index ? 0 : 1))
            // A continuation's first frame is the scanned caller itself, already listed.
            for frame in stretch.dropFirst(start == index ? 0 : 1) {
                let trust: FrameTrust = frames.isEmpty ? .context : frame.trust
                frames.append(RawFrame(address: Address(frame.pc), kind: frames.isEmpty || frame.activation ? .pc : .returnAddress, trust: trust))
            }
            switch outcome {
            case .ended:
                return finish(frames, index: index, stopped: stopped, scans: scans, warnings: &warnings)
            case .truncated:
                warnings.append("thread \(index): the walk stopped at \(limit) frames")
                return finish(frames, index: index, stopped: stopped, scans: scans, warnings: &warnings)
            case .stopped(let reason):
                if stopped == nil { stopped = "the walk stopped after \(frames.count) frames: \(reason)" }
            }
            guard frames.count < limit, scans < NativeUnwinder.maxScans, let last = stretch.last,
                let found = scan(from: last, context: frames.count == 1)
            else { return finish(frames, index: index, stopped: stopped, scans: scans, warnings: &warnings) }
            scans += 1
            frames.append(RawFrame(address: Address(found.returnAddress), kind: .returnAddress, trust: .scan))
            // The caller as it was just before the call returned: the return address popped
            // (the stack pointer past its slot), the callee's other registers taken as kept, and
            // the lookup inside the call instruction (a call may be a function's last).
            var registers = last.registers
            if let layout { registers[layout.stackPointer] = found.slot &+ 8 }
            starts.append(WalkStart(pc: found.returnAddress &- 1, registers: registers))
            start = starts.count - 1
        }
    }

    private func finish(_ frames: [RawFrame], index: Int, stopped: String?, scans: Int, warnings: inout [String]) -> [RawFrame] {
        if let stopped {
            warnings.append("thread \(index): \(stopped)" + (scans > 0 ? "; \(scans) later frames were found by scanning the stack" : ""))
        }
        return frames
    }

    enum Outcome {
        /// The outermost frame was reached (its caller is undefined or zero).
        case ended
        case truncated
        case stopped(String)
    }

    /// libdwfl's walk from `starts[start]`, up to `limit` frames, ended at the first caller that
    /// is not plausible.
    private func stretch(from start: Int, limit: Int) -> ([WalkedFrame], Outcome) {
        let first = starts[start]
        guard let layout else {
            return ([WalkedFrame(pc: first.pc, activation: true, registers: first.registers, trust: .context)], .stopped("no register layout for \(capture.arch.name)"))
        }
        guard attached, let dwfl else {
            return framePointerStretch(from: first, context: start < capture.threads.count, limit: limit, layout: layout)
        }
        final class Collected {
            var frames: [WalkedFrame] = []
            var ended = false
            var implausible: String?
            let limit: Int
            let session: Session
            let layout: RegisterLayout
            init(limit: Int, session: Session, layout: RegisterLayout) {
                self.limit = limit
                self.session = session
                self.layout = layout
            }
        }
        let collected = Collected(limit: max(1, limit), session: self, layout: layout)
        Session.current = self
        defer { Session.current = nil }
        let result = dwfl_getthread_frames(dwfl, pid_t(start + 1), { frame, arg in
            guard let frame, let arg else { return Int32(DWARF_CB_ABORT) }
            let collected = Unmanaged<Collected>.fromOpaque(arg).takeUnretainedValue()
            var pc: Dwarf_Addr = 0
            var activation = false
            guard dwfl_frame_pc(frame, &pc, &activation) else { return Int32(DWARF_CB_ABORT) }
            // A return address of 0 ends a stack (the outermost frame's caller).
            if pc == 0 {
                collected.ended = true
                return Int32(DWARF_CB_ABORT)
            }
            let registers: [UInt64?] = (0..<collected.layout.count).map { number in
                var value: Dwarf_Word = 0
                return dwfl_frame_reg(frame, UInt32(number), &value) == 0 ? value : nil
            }
            var trust = FrameTrust.context
            if let callee = collected.frames.last {
                // The caller was found from the callee's CFI when its module has some for the
                // callee's code (a return address is looked up at its call instruction).
                trust = collected.session.hasCFI(at: callee.activation ? callee.pc : callee.pc &- 1) ? .cfi : .framePointer
                if let reason = collected.session.implausible(pc: pc, registers: registers, callee: callee, trust: trust) {
                    collected.implausible = reason
                    return Int32(DWARF_CB_ABORT)
                }
            }
            collected.frames.append(WalkedFrame(pc: pc, activation: activation, registers: registers, trust: trust))
            return collected.frames.count >= collected.limit ? Int32(DWARF_CB_ABORT) : Int32(DWARF_CB_OK)
        }, Unmanaged.passUnretained(collected).toOpaque())
        if collected.frames.isEmpty {
            let error = String(cString: dwfl_errmsg(-1))
            return ([WalkedFrame(pc: first.pc, activation: true, registers: first.registers, trust: .context)], .stopped(error))
        }
        if collected.ended || result == 0 { return (collected.frames, .ended) }
        if let reason = collected.implausible { return (collected.frames, .stopped(reason)) }
        if collected.frames.count >= collected.limit { return (collected.frames, .truncated) }
        return (collected.frames, .stopped(String(cString: dwfl_errmsg(-1))))
    }

    /// The frame-pointer chain alone, for a capture with no module libdwfl can read (none of its
    /// files is stored, or they are Mach-O: a macOS or iOS dump, whose ABI keeps frame pointers).
    /// Each frame record is the caller's frame pointer and the return address; the chain must
    /// climb the stack, and each return address must fall in a module.
    ///
    /// A function that calls nothing may keep no frame record: its caller's record is then the
    /// one at the frame pointer, and its own return address is at the stack pointer (x86-64) or
    /// in the link register (arm64). So for the context frame, such a return address that falls
    /// in a module and is not the record's is taken as the first caller, marked as a guess.
    private func framePointerStretch(from first: WalkStart, context: Bool, limit: Int, layout: RegisterLayout) -> ([WalkedFrame], Outcome) {
        var frames = [WalkedFrame(pc: first.pc, activation: true, registers: first.registers, trust: .context)]
        var registers = first.registers
        if context, limit > 1, let fp = registers[layout.framePointer], let sp = registers[layout.stackPointer] {
            let recorded = capture.word(at: fp &+ 8)
            var leaf = registers
            var returnAddress: UInt64?
            switch capture.arch.cpu {
            case .x86_64?:
                returnAddress = capture.word(at: sp)
                leaf[layout.stackPointer] = sp &+ 8
            case .arm64?:
                returnAddress = registers.indices.contains(30) ? registers[30] : nil
            default:
                break
            }
            if let returnAddress, returnAddress != recorded, image(containing: returnAddress) != nil {
                frames.append(WalkedFrame(pc: returnAddress, activation: false, registers: leaf, trust: .scan))
                registers = leaf
            }
        }
        while frames.count < max(1, limit) {
            guard let fp = registers[layout.framePointer], let sp = registers[layout.stackPointer], fp >= sp, fp % 8 == 0,
                let callerFP = capture.word(at: fp), let returnAddress = capture.word(at: fp &+ 8)
            else { return (frames, .stopped("no frame record at the frame pointer")) }
            if returnAddress == 0 { return (frames, .ended) }
            guard image(containing: returnAddress) != nil else {
                return (frames, .stopped(String(format: "the caller 0x%llx is in no module", returnAddress)))
            }
            registers[layout.framePointer] = callerFP
            registers[layout.stackPointer] = fp &+ 16
            frames.append(WalkedFrame(pc: returnAddress, activation: false, registers: registers, trust: .framePointer))
            // The outermost frame's record holds a zero frame pointer; one that does not climb lies.
            if callerFP == 0 { return (frames, .ended) }
            guard callerFP > fp else { return (frames, .stopped("the frame-pointer chain does not climb the stack")) }
        }
        return (frames, .truncated)
    }

    /// Why a caller libdwfl found is not believed; nil when it is.
    private func implausible(pc: UInt64, registers: [UInt64?], callee: WalkedFrame, trust: FrameTrust) -> String? {
        guard image(containing: pc) != nil else { return String(format: "the caller 0x%llx is in no module", pc) }
        // A frame-pointer step must climb the stack; CFI is believed as written (a signal frame
        // on an alternate stack may go down).
        if trust == .framePointer, let layout, let sp = registers[layout.stackPointer], let calleeSP = callee.registers[layout.stackPointer], sp <= calleeSP {
            return "a frame-pointer step went down the stack"
        }
        return nil
    }

    func hasCFI(at pc: UInt64) -> Bool {
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

    /// The first stack word from `frame`'s stack pointer up that could be a return address: one
    /// in an executable segment of a module with a file, or anywhere in a module without one (as
    /// Breakpad does when it has no symbols).
    func scan(from frame: WalkedFrame, context: Bool) -> (slot: UInt64, returnAddress: UInt64)? {
        guard let layout, let sp = frame.registers[layout.stackPointer] else { return nil }
        var address = sp
        for _ in 0..<(context ? NativeUnwinder.contextScanWords : NativeUnwinder.frameScanWords) {
            guard let word = capture.word(at: address) else { return nil }
            if word != 0, isCode(word) { return (address, word) }
            let (next, overflow) = address.addingReportingOverflow(8)
            if overflow { return nil }
            address = next
        }
        return nil
    }

    /// The report's image whose extent holds `address`. An image without a size holds nothing
    /// here (`ImageLocator` would give it every address above it): a walk believes a caller
    /// only inside a module's known extent.
    private func image(containing address: UInt64) -> Int? {
        locator.image(containing: address).flatMap { images[$0].contains(address) ? $0 : nil }
    }

    /// Whether `address` lies in a module's code: an executable segment of a reported module, or
    /// the extent of a module without a file.
    private func isCode(_ address: UInt64) -> Bool {
        guard let index = image(containing: address) else { return false }
        guard reported.contains(index), let dwfl else { return true }
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
