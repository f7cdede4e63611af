import Foundation
import ReportFormats
import ReportModel
import Testing

/// The minidump reader on dumps laid out here byte by byte from the format's documented
/// structures (MINIDUMP_HEADER, the stream directory, MINIDUMP_THREAD, MINIDUMP_MODULE, the
/// AMD64 context): what it must read, and every lie it must refuse by name. Real dumps made by
/// LLDB are checked end to end in MinidumpEndToEndTests.
@Suite struct MinidumpFormatTests {
    /// A little-endian byte builder with named places to patch later.
    struct Bytes {
        var data: [UInt8] = []
        mutating func u16(_ v: UInt16) { data += [UInt8(v & 0xff), UInt8(v >> 8)] }
        mutating func u32(_ v: UInt32) { for i in 0..<4 { data.append(UInt8(v >> (8 * UInt32(i)) & 0xff)) } }
        mutating func u64(_ v: UInt64) { for i in 0..<8 { data.append(UInt8(v >> (8 * UInt64(i)) & 0xff)) } }
        mutating func pad(to n: Int) { while data.count < n { data.append(0) } }
        mutating func set32(_ at: Int, _ v: UInt32) { for i in 0..<4 { data[at + i] = UInt8(v >> (8 * UInt32(i)) & 0xff) } }
        mutating func set64(_ at: Int, _ v: UInt64) { for i in 0..<8 { data[at + i] = UInt8(v >> (8 * UInt64(i)) & 0xff) } }
    }

    struct Layout {
        var threadCount: UInt32 = 1
        var stackStart: UInt64 = 0x7000_0000
        var stackBytes: [UInt8] = (0..<64).map { UInt8($0) }
        var extraMemory: [(start: UInt64, bytes: [UInt8])] = []
        var architecture: UInt16 = 9
        var stackOffsetOverride: UInt32?
    }

    static let buildID: [UInt8] = (0..<20).map { UInt8(0xa0 + $0) }
    static let pc: UInt64 = 0x5555_5555_51c0
    static let sp: UInt64 = 0x7000_0010

    /// Header, directory of 4 streams (system info, module list, thread list, memory list), then each.
    static func dump(_ layout: Layout = Layout()) -> Data {
        var b = Bytes()
        b.u32(0x504d_444d); b.u32(0xa793); b.u32(4); b.u32(32); b.u32(0); b.u32(0); b.u64(0)
        let directory = b.data.count
        b.pad(to: directory + 4 * 12)
        func entry(_ n: Int, type: UInt32, size: Int, at: Int) {
            b.set32(directory + 12 * n, type); b.set32(directory + 12 * n + 4, UInt32(size)); b.set32(directory + 12 * n + 8, UInt32(at))
        }
        // System info: arch, level, revision, processors, product, major, minor, build, platform (Linux), CSD rva.
        let system = b.data.count
        b.u16(layout.architecture); b.u16(0); b.u16(0); b.data += [2, 1]; b.u32(6); b.u32(1); b.u32(0); b.u32(0x8201); b.u32(0)
        b.pad(to: system + 56)
        entry(0, type: 7, size: 56, at: system)
        // The module's name (MINIDUMP_STRING) and CodeView record (BpEL + build id).
        let name = b.data.count
        let path = Array("/opt/app/bin/demo".utf16)
        b.u32(UInt32(path.count * 2)); for unit in path { b.u16(unit) }; b.u16(0)
        let cv = b.data.count
        b.data += Array("BpEL".utf8); b.data += buildID
        // Module list: one MINIDUMP_MODULE (108 bytes).
        let modules = b.data.count
        b.u32(1)
        let module = b.data.count
        b.u64(0x5555_5555_4000); b.u32(0x4000); b.u32(0); b.u32(0); b.u32(UInt32(name))
        b.pad(to: module + 24 + 52)
        b.u32(UInt32(buildID.count + 4)); b.u32(UInt32(cv)); b.u32(0); b.u32(0); b.u64(0); b.u64(0)
        entry(1, type: 4, size: b.data.count - modules, at: modules)
        // The context: MINIDUMP_CONTEXT_AMD64 up to rip (256 bytes): rsp at 152, rbp at 160, rip at 248.
        let context = b.data.count
        b.pad(to: context + 256)
        b.set64(context + 152, sp); b.set64(context + 160, 0x7000_0030); b.set64(context + 248, pc); b.set64(context + 120, 7)
        let stack = b.data.count
        b.data += layout.stackBytes
        // Thread list: MINIDUMP_THREAD is 48 bytes.
        let threads = b.data.count
        b.u32(layout.threadCount)
        b.u32(0x6b0c); b.u32(0); b.u32(0); b.u32(0); b.u64(0)
        b.u64(layout.stackStart); b.u32(UInt32(layout.stackBytes.count)); b.u32(layout.stackOffsetOverride ?? UInt32(stack))
        b.u32(256); b.u32(UInt32(context))
        entry(2, type: 3, size: b.data.count - threads, at: threads)
        // Memory list: the stack again (as writers list it), then any extra ranges.
        var ranges: [(UInt64, Int, Int)] = [(layout.stackStart, layout.stackBytes.count, stack)]
        for extra in layout.extraMemory {
            let at = b.data.count
            b.data += extra.bytes
            ranges.append((extra.start, extra.bytes.count, at))
        }
        let memory = b.data.count
        b.u32(UInt32(ranges.count))
        for (start, size, at) in ranges { b.u64(start); b.u32(UInt32(size)); b.u32(UInt32(at)) }
        entry(3, type: 5, size: b.data.count - memory, at: memory)
        return Data(b.data)
    }

    func refusal(_ data: Data) -> String? {
        do {
            _ = try MinidumpFormat().parse(data)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func aDumpLaidOutByHandReadsBack() throws {
        let data = Self.dump()
        #expect(FormatRegistry.standard.detect(data)?.id == "minidump")
        let report = try FormatRegistry.standard.detectAndParse(data)
        #expect(report.arch?.cpu == .x86_64)
        #expect(report.platform == "Linux")
        #expect(report.images.count == 1)
        #expect(report.images.first?.name == "demo" && report.images.first?.path == "/opt/app/bin/demo")
        #expect(report.images.first?.id?.hex == Self.buildID.map { String(format: "%02x", $0) }.joined())
        #expect(report.images.first?.loadAddress.value == 0x5555_5555_4000)
        #expect(report.threads.count == 1)
        #expect(report.threads.first?.frames.map(\.address.value) == [Self.pc])
        #expect(report.threads.first?.frames.first?.trust == .context)
        let native = try #require(report.native)
        // DWARF order: rax 0 (7 here), rsp 7, rbp 6.
        #expect(native.threads.first?.registers[0] == 7)
        #expect(native.threads.first?.registers[7] == Self.sp)
        #expect(native.threads.first?.registers[6] == 0x7000_0030)
        // The stack listed twice alike is one range; its words read little-endian.
        #expect(native.memory.count == 1)
        #expect(native.word(at: 0x7000_0000) == 0x0706_0504_0302_0100)
        #expect(native.word(at: 0x7000_0000 + 57) == nil, "a word past the range's end")
    }

    @Test func liesAreRefusedByName() {
        var tooMany = Layout()
        tooMany.threadCount = 0xffff_ffff
        #expect(refusal(Self.dump(tooMany))?.contains("thread list: 4294967295 entries") == true, "\(refusal(Self.dump(tooMany)) ?? "")")

        var pastTheEnd = Layout()
        pastTheEnd.stackOffsetOverride = 0x7fff_0000
        #expect(refusal(Self.dump(pastTheEnd))?.contains("run past the end") == true)

        var x86 = Layout()
        x86.architecture = 0
        #expect(refusal(Self.dump(x86))?.contains("processor architecture 0") == true)

        // Every prefix of a dump is refused with a reason or read; none traps.
        let whole = Self.dump()
        for length in stride(from: 0, to: whole.count, by: 7) {
            _ = refusal(whole.prefix(length))
        }
        #expect(refusal(whole.prefix(20))?.contains("malformed minidump report") == true)
    }

    /// Memory that overlaps a thread's stack with other contents, or runs past 2^64, lies: it
    /// is left out with a warning, and the stack the thread names is the one read.
    @Test func lyingMemoryIsLeftOutWithAWarning() throws {
        var layout = Layout()
        layout.extraMemory = [(0x7000_0020, [UInt8](repeating: 0xee, count: 64)), (UInt64.max - 8, [UInt8](repeating: 1, count: 32))]
        let report = try MinidumpFormat().parse(Self.dump(layout))
        let native = try #require(report.native)
        #expect(native.memory.map(\.start) == [0x7000_0000])
        #expect(native.word(at: 0x7000_0020) == 0x2726_2524_2322_2120)
        #expect(report.warnings.contains { $0.contains("overlaps 0x70000000–0x70000040 with other contents; left out") }, "\(report.warnings)")
        #expect(report.warnings.contains { $0.contains("runs past the end of the address space; left out") }, "\(report.warnings)")
    }

    @Test func rangesThatMeetWithoutOverlappingAreKept() throws {
        var layout = Layout()
        layout.extraMemory = [(0x7000_0040, [UInt8](repeating: 0xab, count: 16))]
        let native = try #require(try MinidumpFormat().parse(Self.dump(layout)).native)
        #expect(native.memory.map(\.start) == [0x7000_0000, 0x7000_0040])
        #expect(native.word(at: 0x7000_0040) == 0xabab_abab_abab_abab)
        // A word across the seam of two ranges is not read as one.
        #expect(native.word(at: 0x7000_003c) == nil)
    }
}
