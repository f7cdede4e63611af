import Foundation
import ReportModel
import SymbolStore
import Symbolication
import TestSupport
import Testing

/// Reports against a store holding the fat Sample.dSYM (two slices, two UUIDs). Expected
/// answers come from llvm-symbolizer reading the named slice of the dSYM.
@Suite struct MachOReportTests {
    /// "linkage name @ file:line" per inline level, innermost first; "??" for no line.
    typealias Levels = [String]

    /// llvm-symbolizer's answers at file `addresses` of one slice of the fat dSYM.
    func oracle(arch: String, _ addresses: [UInt64]) throws -> [Levels] {
        let out = try runChecked(
            try findTool(anyOf: ["llvm-symbolizer-14", "llvm-symbolizer"]),
            ["--obj=\(MachOFixtures.dSYMDWARF):\(arch)", "-i", "-f", "--no-demangle", "--output-style=JSON"],
            stdin: addresses.map { "0x" + String($0, radix: 16) }.joined(separator: "\n") + "\n")
        return try out.stdout.split(separator: "\n").map { line in
            let entry = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let symbols = entry["Symbol"] as? [[String: Any]] ?? []
            return symbols.map { s in
                let line = s["Line"] as? Int ?? 0
                return "\(s["FunctionName"] as? String ?? "??") @ \(line > 0 ? "\(s["FileName"] as? String ?? "??"):\(line)" : "??")"
            }
        }
    }

    /// Stackline's levels per raw frame of the first thread.
    func levels(_ report: SymbolicatedReport, frames: Int) -> [Levels] {
        var out = [Levels](repeating: [], count: frames)
        for f in report.threads[0].frames where f.symbol != nil {
            let line = f.line ?? 0
            out[f.index].append("\(f.symbol!) @ \(line > 0 ? "\(f.file ?? "??"):\(line)" : "??")")
        }
        return out
    }

    func report(uuid: String, arch: String, reportArch: String? = nil, load: UInt64, runtime: [UInt64]) -> RawReport {
        RawReport(
            format: "test", kind: .crash, platform: "iOS", arch: Arch(reportArch ?? arch),
            images: [BinaryImage(name: "Sample", id: try? BuildID(uuid), arch: Arch(arch), loadAddress: Address(load), size: 0x10_0000)],
            threads: [RawThread(index: 0, crashed: true, frames: runtime.map { RawFrame(address: Address($0), kind: .pc) })])
    }

    func storeWithFatDSYM() throws -> (TempDirectory, SymbolStoreDirectory) {
        let root = try TempDirectory("store")
        let store = SymbolStoreDirectory(root: root.path)
        _ = try store.addFile(path: MachOFixtures.dSYMDWARF)
        return (root, store)
    }

    /// 60 instructions spread over the slice's `__text`, found by llvm-objdump.
    func sample(arch: String) throws -> [UInt64] {
        let all = try instructionAddresses(in: MachOFixtures.executable, section: "__text", arch: arch)
        return (0..<60).map { all[$0 * all.count / 60] }
    }

    @Test(arguments: ["arm64", "x86_64"])
    func reportNamingOneUUIDUsesThatSliceOnly(arch: String) throws {
        let (root, store) = try storeWithFatDSYM()
        defer { root.remove() }
        let uuids = try MachOFixtures.uuids(MachOFixtures.dSYMDWARF)
        let uuid = try #require(uuids[arch])
        let other = try #require(uuids.keys.first { $0 != arch })
        let fileAddresses = try sample(arch: arch)
        // A realistic ASLR slide: page-aligned, below 4 GiB.
        let slide = UInt64.random(in: 1...0x3_ffff) << 14
        let vmaddr = try MachOFixtures.textVMAddress(MachOFixtures.executable, arch: arch)
        let runtime = fileAddresses.map { $0 + slide }

        let result = Symbolicator(store: store, style: .full).symbolicate(report(uuid: uuid, arch: arch, load: vmaddr + slide, runtime: runtime))
        let expected = try oracle(arch: arch, fileAddresses)
        let wrongSlice = try oracle(arch: other, fileAddresses)
        // The slices differ at these addresses, so agreeing with one is choosing it.
        #expect(zip(expected, wrongSlice).filter { $0 != $1 }.count > fileAddresses.count / 2)
        let mine = levels(result, frames: runtime.count)
        for i in fileAddresses.indices {
            #expect(mine[i] == expected[i], "\(arch) 0x\(String(fileAddresses[i], radix: 16)) (slide 0x\(String(slide, radix: 16))): \(mine[i]) vs llvm-symbolizer \(expected[i])")
        }
        #expect(result.status == .complete, "\(result.status)")
    }

    @Test func arm64eReturnAddressesLoseTheirPointerAuthenticationBits() throws {
        let (root, store) = try storeWithFatDSYM()
        defer { root.remove() }
        let uuid = try #require(try MachOFixtures.uuids(MachOFixtures.dSYMDWARF)["arm64"])
        let fileAddresses = try sample(arch: "arm64")
        let vmaddr = try MachOFixtures.textVMAddress(MachOFixtures.executable, arch: "arm64")
        let load = vmaddr + (0x2a5 << 14)
        // A signature in bits 36…63, as arm64e puts it in signed return addresses.
        let signed = fileAddresses.map { ($0 - vmaddr + load) | 0x3c4d_0000_0000_0000 }
        let symbolicator = Symbolicator(store: store, style: .full)

        let arm64e = symbolicator.symbolicate(report(uuid: uuid, arch: "arm64", reportArch: "arm64e", load: load, runtime: signed))
        #expect(levels(arm64e, frames: signed.count) == (try oracle(arch: "arm64", fileAddresses)))

        // The same addresses in an x86_64 report are not masked: they lie in no image.
        let x86 = symbolicator.symbolicate(report(uuid: uuid, arch: "x86_64", load: load, runtime: signed))
        #expect(x86.threads[0].frames.allSatisfy { $0.status == .outsideAnyImage }, "\(x86.threads[0].frames.map(\.status))")
    }

    @Test func onlyAppleArm64IsMasked() {
        let signed: UInt64 = 0x3c4d_0001_0000_4010
        #expect(PointerAuthentication.strip(signed, arch: "arm64e", platform: nil) == 0x1_0000_4010)
        #expect(PointerAuthentication.strip(signed, arch: "arm64", platform: "iOS") == 0x1_0000_4010)
        // The SDK lag report spells the arch "arm64 v8".
        #expect(PointerAuthentication.strip(signed, arch: "arm64 v8", platform: "iOS") == 0x1_0000_4010)
        // Linux arm64 maps code above 2^36 (0xaaaa… for PIEs): masking would break it.
        #expect(PointerAuthentication.strip(0xaaaa_d3c0_1234, arch: "arm64", platform: "Linux") == 0xaaaa_d3c0_1234)
        #expect(PointerAuthentication.strip(signed, arch: "x86_64", platform: "macOS") == signed)
        // Apple's platforms as reports spell them, in any case; anything else is left alone.
        for apple in ["iPhone OS 17.2 (21C62)", "Mac OS X 10.15.7", "macOS 14.1", "IOS", "watchOS 10", "xrOS 1.0", "Darwin"] {
            #expect(PointerAuthentication.strip(signed, arch: "arm64", platform: apple) == 0x1_0000_4010, "\(apple)")
        }
        for other in ["Android 14", "Linux", "", "i", "Windows"] {
            #expect(PointerAuthentication.strip(signed, arch: "arm64", platform: other) == signed, "\(other)")
        }
    }
}
