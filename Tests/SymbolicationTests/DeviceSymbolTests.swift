import Foundation
import ReportModel
import SymbolStore
import Symbolication
import TestSupport
import Testing

/// A name the device already resolved survives symbolication when no debug file answers, marked
/// `deviceSymbol`; a stored debug file always wins over it. Real ELF fixture, real libdw; the
/// expected function comes from `nm` and the demangled name from `c++filt`.
@Suite struct DeviceSymbolTests {
    let fixture: ElfFixture
    init() throws { fixture = try sharedElfFixtures.get().named("c-gcc-pie") }

    /// A defined function of the fixture and its address, read by binutils `nm`.
    func someFunction() throws -> (name: String, address: UInt64) {
        let out = try runChecked(try findTool("nm"), ["--defined-only", fixture.unstripped]).stdout
        for line in out.split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count == 3, f[1] == "T", !f[2].hasPrefix("_"), let address = UInt64(f[0], radix: 16), address > 0 else { continue }
            return (String(f[2]), address)
        }
        throw TestSupportError("nm listed no global function in \(fixture.unstripped)")
    }

    func report(address: UInt64, deviceName: String, offset: UInt64?) throws -> RawReport {
        let load: UInt64 = 0x5555_0000_0000
        return RawReport(
            format: "test", kind: .crash, arch: Arch("x86_64"),
            images: [BinaryImage(name: "c-gcc-pie", id: try BuildID(fixture.buildID!), loadAddress: Address(load), size: 0x100000)],
            threads: [RawThread(index: 0, crashed: true, frames: [
                RawFrame(address: Address(load + address), kind: .pc, symbol: deviceName, symbolOffset: offset),
            ])])
    }

    @Test func withoutADebugFileTheDeviceNameIsKeptWithItsProvenance() throws {
        let (_, address) = try someFunction()
        let store = SymbolStoreDirectory(root: try makeTemporaryDirectory(prefix: "device-empty"))
        let out = Symbolicator(store: store).symbolicate(try report(address: address, deviceName: "JSValueIsString", offset: 155))
        let frame = try #require(out.threads.first?.frames.first)
        #expect(frame.status == .deviceSymbol)
        #expect(frame.function == "JSValueIsString")
        #expect(frame.offset == 155)
        #expect(out.missingBuildIds.map(\.hex) == [fixture.buildID!], "the debug file is still missing, and still listed")
    }

    @Test func aStoredDebugFileWinsOverTheDeviceName() throws {
        let (name, address) = try someFunction()
        let store = SymbolStoreDirectory(root: try makeTemporaryDirectory(prefix: "device-stored"))
        _ = try store.add(path: fixture.unstripped)
        let out = Symbolicator(store: store).symbolicate(try report(address: address, deviceName: "wrongName", offset: 1))
        let outermost = try #require(out.threads.first?.frames.last)
        #expect(outermost.status == .symbolicated)
        #expect(outermost.symbol == name)
        #expect(!(out.threads.first?.frames ?? []).contains { $0.function == "wrongName" })
    }

    @Test func aMangledDeviceNameIsDemangledLikeAnyOther() throws {
        let (_, address) = try someFunction()
        let mangled = "_ZN4Shop4Cart8checkoutEi"
        let expected = try runChecked(try findTool("c++filt"), [mangled]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let store = SymbolStoreDirectory(root: try makeTemporaryDirectory(prefix: "device-mangled"))
        let out = Symbolicator(store: store).symbolicate(try report(address: address, deviceName: mangled, offset: nil))
        let frame = try #require(out.threads.first?.frames.first)
        #expect(frame.status == .deviceSymbol)
        #expect(frame.symbol == mangled)
        #expect(frame.function == expected)
    }
}
