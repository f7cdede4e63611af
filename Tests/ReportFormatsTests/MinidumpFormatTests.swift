import Foundation
import ReportFormats
import ReportModel
import TestSupport
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
        /// Appends a Crashpad info stream (0x43500001) written by `crashpadStream(at:)`.
        var crashpad = false
        /// Points the Crashpad stream's module list past the end of the file (a lie).
        var crashpadLies = false
    }

    /// The client id's bytes, and the id as Crashpad prints it (a GUID: the first three fields
    /// little-endian), worked out by hand.
    static let clientIDBytes: [UInt8] = (0..<16).map { UInt8($0) }
    static let clientID = "03020100-0504-0706-0809-0a0b0c0d0e0f"

    /// A MinidumpCrashpadInfo at `base` (the file's offset where it starts), with what it points
    /// to after it: process annotations prod and ver; for module 0, a list annotation, a string
    /// annotation object and one of a client's own type.
    static func crashpadStream(at base: Int, lies: Bool) -> [UInt8] {
        var b = Bytes()
        b.pad(to: 64)  // the header, filled in below
        func utf8(_ text: String) -> UInt32 {
            let at = base + b.data.count
            b.u32(UInt32(text.utf8.count)); b.data += Array(text.utf8); b.data.append(0)
            return UInt32(at)
        }
        func byteArray(_ bytes: [UInt8]) -> UInt32 {
            let at = base + b.data.count
            b.u32(UInt32(bytes.count)); b.data += bytes
            return UInt32(at)
        }
        let prod = (utf8("prod"), utf8("Demo")), ver = (utf8("ver"), utf8("1.2.3"))
        let dictionary = base + b.data.count
        b.u32(2); b.u32(prod.0); b.u32(prod.1); b.u32(ver.0); b.u32(ver.1)
        let dictionarySize = base + b.data.count - dictionary
        let listed = utf8("assertion failed: <b>x</b>\u{1b}[2J")
        let list = base + b.data.count
        b.u32(1); b.u32(listed)
        let ptype = (utf8("ptype"), byteArray(Array("renderer".utf8)))
        let blob = (utf8("blob"), byteArray([1, 2, 3]))
        let objects = base + b.data.count
        b.u32(2); b.u32(ptype.0); b.u16(1); b.u16(0); b.u32(ptype.1); b.u32(blob.0); b.u16(0x8001); b.u16(0); b.u32(blob.1)
        let objectsSize = base + b.data.count - objects
        let info = base + b.data.count
        b.u32(1); b.u32(8); b.u32(UInt32(list)); b.u32(0); b.u32(0); b.u32(UInt32(objectsSize)); b.u32(UInt32(objects))
        let modules = base + b.data.count
        b.u32(1); b.u32(0); b.u32(28); b.u32(UInt32(info))
        let modulesSize = base + b.data.count - modules
        // The header: version, report id, client id, simple annotations, module list, reserved, address mask.
        var header = Bytes()
        header.u32(1); header.data += [UInt8](repeating: 0xee, count: 16); header.data += clientIDBytes
        header.u32(UInt32(dictionarySize)); header.u32(UInt32(dictionary))
        header.u32(UInt32(modulesSize)); header.u32(lies ? 0x7fff_fff0 : UInt32(modules))
        header.u32(0); header.u64(0)
        b.data.replaceSubrange(0..<64, with: header.data)
        return b.data
    }

    static let buildID: [UInt8] = (0..<20).map { UInt8(0xa0 + $0) }
    static let pc: UInt64 = 0x5555_5555_51c0
    static let sp: UInt64 = 0x7000_0010

    /// Header, directory of 4 streams (system info, module list, thread list, memory list), then each.
    static func dump(_ layout: Layout = Layout()) -> Data {
        var b = Bytes()
        let streams = layout.crashpad ? 5 : 4
        b.u32(0x504d_444d); b.u32(0xa793); b.u32(UInt32(streams)); b.u32(32); b.u32(0); b.u32(0); b.u64(0)
        let directory = b.data.count
        b.pad(to: directory + streams * 12)
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
        if layout.crashpad {
            let crashpad = b.data.count
            b.data += crashpadStream(at: crashpad, lies: layout.crashpadLies)
            entry(4, type: 0x4350_0001, size: 64, at: crashpad)
        }
        return Data(b.data)
    }

    @Test func crashpadAnnotationsClientIDAndAppAreRead() throws {
        let report = try MinidumpFormat().parse(Self.dump(Layout(crashpad: true)))
        #expect(report.annotations == [
            ReportAnnotation(key: "prod", value: "Demo"),
            ReportAnnotation(key: "ver", value: "1.2.3"),
            ReportAnnotation(key: "[0]", value: "assertion failed: <b>x</b>\u{1b}[2J", module: "demo"),
            ReportAnnotation(key: "ptype", value: "renderer", module: "demo"),
        ])
        #expect(report.app == AppInfo(name: "Demo", version: "1.2.3"))
        #expect(report.device?.id == Self.clientID)
        // The object of the client's own type is not text: counted, not shown.
        #expect(report.warnings.contains { $0.contains("Crashpad annotations: 1 not kept") }, "\(report.warnings)")
    }

    @Test func aLyingCrashpadStreamLeavesTheAnnotationsOutNotTheStacks() throws {
        let report = try MinidumpFormat().parse(Self.dump(Layout(crashpad: true, crashpadLies: true)))
        #expect(report.annotations == nil)
        #expect(report.threads.first?.frames.map(\.address.value) == [Self.pc])
        #expect(report.warnings.contains { $0.hasPrefix("Crashpad annotations:") && $0.hasSuffix("left out") }, "\(report.warnings)")
    }

    /// The `minidump` fuzz target's Crashpad seed is this hand-laid dump:
    /// `STACKLINE_WRITE_MINIDUMP_SEEDS=1 swift test --filter MinidumpFormatTests` rewrites it.
    @Test func theCrashpadSeedIsTheHandLaidDump() throws {
        let path = packageRoot + "/Tests/Fixtures/fuzz-seeds/minidump/hand-laid-crashpad.dmp"
        let dump = Self.dump(Layout(crashpad: true))
        if ProcessInfo.processInfo.environment["STACKLINE_WRITE_MINIDUMP_SEEDS"] == "1" {
            try dump.write(to: URL(fileURLWithPath: path))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == dump)
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
