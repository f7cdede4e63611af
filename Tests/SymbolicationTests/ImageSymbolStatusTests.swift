import Foundation
import ReportModel
import SymbolStore
import Symbolication
import TestSupport
import Testing

/// Every image of a symbolicated report gets its symbol status, and each status comes from how
/// the test made that image's debug file (`SymbolStatusPrograms`: gcc, objcopy, clang for
/// aarch64, a stored file overwritten afterwards), never from the symbolicator's own output.
@Suite struct ImageSymbolStatusTests {
    static let load: UInt64 = 0x7f00_0000_0000

    /// One image per status, each 16 MiB apart, one frame in each but the unused one.
    static func report(_ p: SymbolStatusPrograms) throws -> RawReport {
        let entries: [(name: String, id: String?, arch: String, address: UInt64?, device: String?)] = [
            (p.lines.name, p.lines.buildID, "x86_64", p.lines.address, nil),
            (p.symbols.name, p.symbols.buildID, "x86_64", p.symbols.address, nil),
            ("libnotfound.so", SymbolStatusPrograms.notFoundID, "x86_64", 0x1100, nil),
            // The device ran the x86_64 build (`x86Twin`): its address; the store holds the aarch64 one.
            (p.aarch64.name, p.aarch64.buildID, "x86_64", p.x86Twin.address, nil),
            (p.replaced.name, p.replaced.buildID, "x86_64", p.replaced.address, nil),
            ("libnoid.so", nil, "x86_64", 0x1100, nil),
            ("libdevice.so", SymbolStatusPrograms.deviceOnlyID, "x86_64", 0x1100, "device_named_func"),
            ("libunused.so", SymbolStatusPrograms.unusedID, "x86_64", nil, nil),
        ]
        var images: [BinaryImage] = []
        var threads: [RawThread] = []
        for (i, e) in entries.enumerated() {
            let base = load + UInt64(i) << 24
            images.append(BinaryImage(
                name: e.name, id: try e.id.map { try BuildID($0) }, arch: Arch(e.arch), loadAddress: Address(base), size: 1 << 20))
            guard let address = e.address else { continue }
            threads.append(RawThread(index: threads.count, crashed: threads.isEmpty, frames: [
                RawFrame(address: Address(base + address + 4), kind: .pc, symbol: e.device, symbolOffset: e.device == nil ? nil : 4),
            ]))
        }
        return RawReport(format: "test", kind: .crash, arch: Arch("x86_64"), images: images, threads: threads)
    }

    /// A store holding the lines, symbols, aarch64 and replaced libraries, the last overwritten
    /// after it was stored with another build's bytes.
    static func store(_ p: SymbolStatusPrograms) throws -> SymbolStoreDirectory {
        let store = SymbolStoreDirectory(root: try makeTemporaryDirectory(prefix: "status-store"))
        for library in [p.lines, p.symbols, p.aarch64, p.replaced] { _ = try store.add(path: library.path) }
        let stored = try #require(store.debugFilePath(buildID: try BuildID(p.replaced.buildID)))
        try FileManager.default.removeItem(atPath: stored)
        try FileManager.default.copyItem(atPath: p.replacement.path, toPath: stored)
        return store
    }

    @Test func eachImageGetsTheStatusItsDebugFileCallsFor() throws {
        let p = try SymbolStatusPrograms.build()
        let raw = try Self.report(p)
        let out = Symbolicator(store: try Self.store(p)).symbolicate(raw)
        let symbols = try #require(out.imageSymbols)
        #expect(symbols.map(\.image) == Array(raw.images.indices), "one entry per image, in image order")
        // The unused image's entry is its index and status only: its name and id are in `images`.
        let names: [String?] = raw.images.prefix(7).map(\.name) + [nil]
        #expect(symbols.map(\.name) == names)
        let expected: [SymbolStatus] = [.ok, .symbolTableOnly, .notFound, .wrongArchitecture, .unreadable, .noIdentifier, .deviceSymbolsOnly, .unused]
        #expect(symbols.map(\.status) == expected)
        #expect(symbols[2].searched == ["symbol store"])
        #expect(symbols[6].searched == ["symbol store"])
        #expect(symbols[4].detail?.contains(p.replacement.buildID) == true, "the reason names the id the stored file has: \(symbols[4].detail ?? "")")
        #expect(symbols[3].detail?.contains("arm64") == true && symbols[3].detail?.contains("x86_64") == true, "\(symbols[3].detail ?? "")")
        #expect(symbols[5].buildId == nil)
        #expect(symbols[7].detail == nil && symbols[7].searched == nil && symbols[7].buildId == nil)
        for s in symbols where s.status != .unused { #expect(s.detail?.isEmpty == false, "\(s.status) says why") }

        // The frames agree: line tables, a symbol table, and no answer from the other architecture.
        let frames = out.threads.map { $0.frames.last! }
        #expect(frames[0].status == .symbolicated && frames[0].function == p.lines.function && frames[0].file?.hasSuffix("lines.c") == true)
        #expect(frames[1].status == .noLineInfo && frames[1].function == p.symbols.function && frames[1].file == nil)
        #expect(frames[3].status == .missingDebugFile, "an aarch64 file never answers for an x86_64 image")
        #expect(frames[6].status == .deviceSymbol && frames[6].function == "device_named_func")

        // What an upload fixes, each with its status: what the worker's reply carries.
        let missing = MissingDebugFile.all(in: out)
        let byID = Dictionary(uniqueKeysWithValues: missing.map { ($0.buildID.hex, $0.status) })
        #expect(byID == [
            SymbolStatusPrograms.notFoundID: .notFound, p.aarch64.buildID: .wrongArchitecture, p.replaced.buildID: .unreadable,
            SymbolStatusPrograms.deviceOnlyID: .notFound, p.symbols.buildID: .symbolTableOnly,
        ])
    }

    /// One symbolicator, kept as a worker keeps it, sees each fix at its next report: the file
    /// with line tables that upgrades the symbol-table-only one, the x86_64 file put where the
    /// aarch64 one was, the right file put back where another build's was, and a file added for
    /// the id not found. Without checking a cached file against the store, the first three kept
    /// their old answers.
    @Test func aFixedStoreIsSeenByTheSameSymbolicator() throws {
        let p = try SymbolStatusPrograms.build()
        let store = try Self.store(p)
        let symbolicator = Symbolicator(store: store)
        let raw = try Self.report(p)
        #expect(symbolicator.symbolicate(raw).imageSymbols?.prefix(5).map(\.status) == [.ok, .symbolTableOnly, .notFound, .wrongArchitecture, .unreadable])
        _ = try store.add(path: p.unstripped)
        for id in [p.aarch64.buildID, p.replaced.buildID] { _ = try store.remove(buildID: try BuildID(id)) }
        for path in [p.x86Twin.path, p.replaced.path, p.notFound.path] { _ = try store.add(path: path) }
        let fixed = symbolicator.symbolicate(raw)
        #expect(fixed.imageSymbols?.prefix(5).map(\.status) == [.ok, .ok, .ok, .ok, .ok], "\(fixed.imageSymbols ?? [])")
        let frames = fixed.threads.map { $0.frames.last! }
        #expect(frames[1].function == p.symbols.function && frames[1].file?.hasSuffix("symbols.c") == true)
        #expect(frames[3].function == p.x86Twin.function && frames[3].status == .symbolicated, "\(frames[3])")
        #expect(frames[4].function == p.replaced.function)
        #expect(MissingDebugFile.all(in: fixed).map(\.buildID.hex) == [SymbolStatusPrograms.deviceOnlyID])
    }

    /// A stored file cut short after it was stored (a full disk, a copy interrupted): unreadable,
    /// with the reader's own reason, which says the file is truncated.
    @Test func aStoredFileCutShortIsUnreadableWithItsReason() throws {
        let p = try SymbolStatusPrograms.build()
        let store = SymbolStoreDirectory(root: try makeTemporaryDirectory(prefix: "status-cut"))
        _ = try store.add(path: p.lines.path)
        let stored = try #require(store.debugFilePath(buildID: try BuildID(p.lines.buildID)))
        let size = try #require(try FileManager.default.attributesOfItem(atPath: stored)[.size] as? Int)
        let handle = try #require(FileHandle(forWritingAtPath: stored))
        try handle.truncate(atOffset: UInt64(size / 2))
        try handle.close()
        let out = Symbolicator(store: store).symbolicate(try Self.report(p))
        let lines = try #require(out.imageSymbols?.first)
        #expect(lines.status == .unreadable, "\(lines)")
        #expect(lines.detail?.contains("truncated") == true, "\(lines.detail ?? "")")
        #expect(MissingDebugFile.all(in: out).first { $0.buildID.hex == p.lines.buildID }?.status == .unreadable)
    }

    @Test func theStatusesSurviveTheStoredJSON() throws {
        let p = try SymbolStatusPrograms.build()
        let out = Symbolicator(store: try Self.store(p)).symbolicate(try Self.report(p))
        let bytes = try SymbolicatedReportJSON.encode(out)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(String(decoding: bytes, as: UTF8.self) == String(decoding: try encoder.encode(out), as: UTF8.self))
        #expect(try JSONDecoder().decode(SymbolicatedReport.self, from: Data(bytes)) == out)
    }

    @Test func severalStoresAreNamedByPathAndAllSearched() throws {
        let p = try SymbolStatusPrograms.build()
        let (a, b) = (try makeTemporaryDirectory(prefix: "status-a"), try makeTemporaryDirectory(prefix: "status-b"))
        let out = Symbolicator(stores: [SymbolStoreDirectory(root: a), SymbolStoreDirectory(root: b)]).symbolicate(try Self.report(p))
        #expect(out.imageSymbols?[2].status == .notFound)
        #expect(out.imageSymbols?[2].searched == [a, b])
        // Nothing is stored: every image with an id and a frame is not found, the named one device-only.
        #expect(out.imageSymbols?.map(\.status) == [.notFound, .notFound, .notFound, .notFound, .notFound, .noIdentifier, .deviceSymbolsOnly, .unused])
    }
}
