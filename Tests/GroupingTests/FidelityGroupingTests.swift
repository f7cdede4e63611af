import Foundation
import ReportModel
import Testing

@testable import Grouping

/// What a report already knew reaches its group: device names stand in for missing debug files,
/// the crash message leads the title, and the app keeps programs apart. Expectations follow from
/// the constructed input and the rules issue 12 states.
@Suite struct FidelityGroupingTests {
    static func frame(_ status: FrameStatus, function: String? = nil, image: String, offset: UInt64, inApp: Bool = false) -> SymbolicatedFrame {
        SymbolicatedFrame(
            index: 0, address: Address(0x10_0000 + offset), kind: .returnAddress, image: image,
            imageOffset: Address(offset), status: status, symbol: function, function: function, inApp: inApp)
    }

    static func report(
        app: String? = "Ledger", version: String? = "1.0", message: String? = nil, frames: [SymbolicatedFrame]
    ) -> SymbolicatedReport {
        SymbolicatedReport(
            format: "test", kind: .crash, status: .partial, missingBuildIds: [],
            app: AppInfo(name: app, version: version),
            exception: ExceptionInfo(type: "EXC_BREAKPOINT", signal: "SIGTRAP", message: message),
            threads: frames.isEmpty ? [] : [SymbolicatedThread(index: 0, crashed: true, frames: frames)])
    }

    let fingerprinter = CrashFingerprinter()

    @Test func aDeviceSymbolGroupsByNameNotByOffset() {
        // Two builds of the same system library: different offsets, same device-resolved name.
        let a = fingerprinter.key(for: Self.report(frames: [Self.frame(.deviceSymbol, function: "JSValueIsString", image: "JavaScriptCore", offset: 0x2cad)]))
        let b = fingerprinter.key(for: Self.report(frames: [Self.frame(.deviceSymbol, function: "JSValueIsString", image: "JavaScriptCore", offset: 0x9f00)]))
        #expect(a.fingerprint == b.fingerprint)
        #expect(a.frames == ["JavaScriptCore!JSValueIsString"])
        #expect(a.title.contains("JSValueIsString"), "\(a.title)")
        // Without a device name, the offset is all there is.
        let bare = fingerprinter.key(for: Self.report(frames: [Self.frame(.missingDebugFile, image: "JavaScriptCore", offset: 0x2cad)]))
        #expect(bare.frames == ["JavaScriptCore+0x2cad"])
    }

    @Test func theMessageLeadsTheTitleAndIsNeverHashed() {
        let frames = [Self.frame(.symbolicated, function: "Ledger.entry(at:)", image: "Ledger", offset: 0x40, inApp: true)]
        let first = fingerprinter.key(for: Self.report(message: "Fatal error: Index out of range\nmore detail", frames: frames))
        #expect(first.title.hasPrefix("Fatal error: Index out of range in Ledger.entry(at:)"), "\(first.title)")
        let other = fingerprinter.key(for: Self.report(message: "Fatal error: Index 7 out of range", frames: frames))
        #expect(other.fingerprint == first.fingerprint, "messages carry varying values; the stack decides the group")
        let none = fingerprinter.key(for: Self.report(message: nil, frames: frames))
        #expect(none.title.hasPrefix("EXC_BREAKPOINT (SIGTRAP) in Ledger.entry(at:)"), "\(none.title)")
    }

    @Test func twoProgramsNeverShareAGroup() {
        let frames = [Self.frame(.symbolicated, function: "abort", image: "libc.so.6", offset: 0x10)]
        let one = fingerprinter.key(for: Self.report(app: "server", frames: frames))
        let two = fingerprinter.key(for: Self.report(app: "client", frames: frames))
        #expect(one.fingerprint != two.fingerprint)
        #expect(one.frames == two.frames)
        let lags = LagKeyMaker()
        var hang = Self.report(app: "server", frames: frames)
        hang.kind = .lag
        var otherHang = hang
        otherHang.app?.name = "client"
        #expect(lags.key(for: hang).fingerprint != lags.key(for: otherHang).fingerprint)
    }

    @Test func anEventWithNoStackGroupsByAppVersionAndReason() {
        let oom = fingerprinter.key(for: Self.report(version: "2.0", message: "memory limit exceeded", frames: []))
        #expect(oom.title == "memory limit exceeded (no stack)")
        #expect(oom.fingerprint == fingerprinter.key(for: Self.report(version: "2.0", message: "memory limit exceeded", frames: [])).fingerprint)
        #expect(oom.fingerprint != fingerprinter.key(for: Self.report(version: "2.1", message: "memory limit exceeded", frames: [])).fingerprint)
        #expect(oom.fingerprint != fingerprinter.key(for: Self.report(version: "2.0", message: "watchdog", frames: [])).fingerprint)
        #expect(oom.fingerprint != fingerprinter.key(for: Self.report(app: "Other", version: "2.0", message: "memory limit exceeded", frames: [])).fingerprint)
    }
}
