import Foundation

/// What a native crash artifact (a minidump) captured of the process, for the worker to unwind
/// with the debug files' call-frame information (docs/native.md): each thread's registers and
/// the memory the artifact copied (thread stacks, code around the crash). Checked where it is
/// parsed: regions are sorted and disjoint, and every size is bounded by the artifact's own.
public struct NativeCapture: Codable, Sendable, Hashable {
    public var arch: Arch
    /// Sorted by start, disjoint.
    public var memory: [MemoryRegion]
    /// One per `RawReport.threads` entry, in the same order.
    public var threads: [NativeThreadState]

    public init(arch: Arch, memory: [MemoryRegion], threads: [NativeThreadState]) {
        self.arch = arch
        self.memory = memory
        self.threads = threads
    }

    /// The `count` bytes at `address`, when one region holds all of them.
    public func bytes(at address: UInt64, count: Int) -> Data? {
        guard count >= 0, let region = region(containing: address) else { return nil }
        let offset = address - region.start
        guard UInt64(region.bytes.count) - offset >= UInt64(count) else { return nil }
        let start = region.bytes.startIndex + Int(offset)
        return region.bytes[start..<start + count]
    }

    /// The region whose range holds `address`.
    func region(containing address: UInt64) -> MemoryRegion? {
        var low = 0, high = memory.count
        while low < high {
            let mid = (low + high) / 2
            if memory[mid].start <= address { low = mid + 1 } else { high = mid }
        }
        guard low > 0 else { return nil }
        let region = memory[low - 1]
        return address - region.start < UInt64(region.bytes.count) ? region : nil
    }

    /// The 8 bytes at `address`, little-endian, when one region holds all of them.
    public func word(at address: UInt64) -> UInt64? {
        guard let bytes = bytes(at: address, count: 8) else { return nil }
        var value: UInt64 = 0
        for byte in bytes.reversed() { value = value << 8 | UInt64(byte) }
        return value
    }
}

/// A range of the process's memory as captured.
public struct MemoryRegion: Codable, Sendable, Hashable {
    public var start: UInt64
    public var bytes: Data

    public init(start: UInt64, bytes: Data) {
        self.start = start
        self.bytes = bytes
    }

    /// One past the last address; nil when the range would pass 2^64 (refused when parsed).
    public var end: UInt64? {
        let (end, overflow) = start.addingReportingOverflow(UInt64(bytes.count))
        return overflow ? nil : end
    }
}

/// One thread's registers at the moment of capture, numbered as DWARF numbers them for the
/// capture's arch (x86-64: rax 0, rdx 1, rcx 2, rbx 3, rsi 4, rdi 5, rbp 6, rsp 7, r8–r15 8–15;
/// arm64: x0–x30 0–30, sp 31), so the unwinder hands them to libdwfl as they are.
public struct NativeThreadState: Codable, Sendable, Hashable {
    public var pc: UInt64
    public var registers: [UInt64]

    public init(pc: UInt64, registers: [UInt64]) {
        self.pc = pc
        self.registers = registers
    }

    /// How many DWARF registers a capture of `arch` holds, and which are the stack and frame
    /// pointers (x86-64: rax…r15, rsp 7, rbp 6; arm64: x0…x30 and sp, sp 31, x29). Nil for other
    /// architectures.
    public static func layout(_ arch: Arch) -> (count: Int, stackPointer: Int, framePointer: Int)? {
        switch arch.cpu {
        case .x86_64?: (16, 7, 6)
        case .arm64?: (32, 31, 29)
        default: nil
        }
    }

    /// The stack pointer, when the capture holds it.
    public func stackPointer(_ arch: Arch) -> UInt64? {
        guard let sp = Self.layout(arch)?.stackPointer, registers.indices.contains(sp) else { return nil }
        return registers[sp]
    }
}

/// How the unwinder found a frame, as Breakpad and rust-minidump mark it: the more trusted
/// first. A report whose frames come from the device's own walk has none.
public enum FrameTrust: String, Codable, Sendable, Hashable {
    /// The thread's program counter as captured.
    case context
    /// Call-frame information (`.eh_frame` / `.debug_frame`) of the caller's module.
    case cfi
    /// The frame-pointer chain (no CFI for the frame's code).
    case framePointer = "frame pointer"
    /// A word on the stack that points into a module's code: a guess.
    case scan
}
