import DebugInfo
import Foundation
import ReportModel
import SymbolStore
import TestSupport
import Testing

@Suite struct MachOStoreTests {
    func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    /// One slice of a fat file, cut out by llvm-lipo (the oracle for "stored as its own thin file").
    func lipoThin(_ file: String, arch: String, into dir: TempDirectory) throws -> Data? {
        let out = dir.file("thin-\(arch)")
        try runChecked(try findTool(anyOf: ["llvm-lipo-14", "llvm-lipo"]), [file, "-thin", arch, "-output", out])
        return contents(out)
    }

    @Test func dSYMBundleStoresOneThinEntryPerSlice() throws {
        let root = try TempDirectory("store")
        defer { root.remove() }
        let store = SymbolStoreDirectory(root: root.path)
        let results = store.addTree(path: MachOFixtures.dSYM + "/")
        // Info.plist is skipped, not refused: only the DWARF file is read.
        #expect(results.allSatisfy { (try? $0.result.get()) != nil }, "\(results.map { "\($0.path): \($0.result)" })")

        let uuids = try MachOFixtures.uuids(MachOFixtures.dSYMDWARF)
        #expect(uuids.count == 2)
        for (arch, uuid) in uuids {
            let entry = try #require(store.entry(buildID: BuildID(uuid)), "no entry for \(arch) \(uuid)")
            #expect(entry.arch.name == arch && entry.format == "mach-o" && entry.hasDWARF && entry.hasSymbolTable, "\(entry)")
            #expect(entry.executablePath == nil, "a dSYM holds no code")
            let stored = try #require(store.debugFilePath(buildID: BuildID(uuid)))
            #expect(contents(stored) == (try lipoThin(MachOFixtures.dSYMDWARF, arch: arch, into: root)), "\(arch) slice differs from llvm-lipo -thin")
        }
        #expect(store.list().count == 2)
    }

    @Test func zipOfDSYMBundlesIsUnpackedAndRemoved() throws {
        let scratch = try TempDirectory("zip")
        defer { scratch.remove() }
        let archive = scratch.file("dSYMs.zip")
        let zipped = try runProcess(try findTool("zip"), ["-qr", archive, "Sample.dSYM", "libgeometry.dylib.dSYM"], currentDirectory: MachOFixtures.directory)
        try #require(zipped.succeeded, "\(zipped.summary)")
        let tempBefore = Set((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? [])
            .filter { $0.hasPrefix("stackline-unzip") }

        let store = SymbolStoreDirectory(root: scratch.file("store"))
        let results = store.addTree(path: archive)
        #expect(results.count == 3 && results.allSatisfy { (try? $0.result.get()) != nil }, "\(results.map { "\($0.path): \($0.result)" })")
        var expected = try MachOFixtures.uuids(MachOFixtures.dSYMDWARF).map { ($0.value, $0.key) }
        expected += try MachOFixtures.uuids(MachOFixtures.dylibDWARF).map { ($0.value, $0.key) }
        #expect(Set(store.list().map { "\($0.buildId) \($0.arch)" }) == Set(expected.map { "\($0.0) \($0.1)" }))

        let tempAfter = Set((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? [])
            .filter { $0.hasPrefix("stackline-unzip") }
        #expect(tempAfter.subtracting(tempBefore).isEmpty, "unpacked archive left behind: \(tempAfter.subtracting(tempBefore))")
    }

    /// A zip that would unpack past the cap is refused before anything is written: 64 MiB of
    /// zeros (64 KiB zipped) against a 1 MiB cap, through the real `stackline symbols add`.
    @Test func zipBombIsRefusedBeforeUnpacking() throws {
        let scratch = try TempDirectory("zipbomb")
        defer { scratch.remove() }
        try runChecked("/bin/sh", ["-c", "head -c 67108864 /dev/zero > '\(scratch.file("zeros.debug"))'"])
        try runChecked(try findTool("zip"), ["-qj", scratch.file("bomb.zip"), scratch.file("zeros.debug")])
        try FileManager.default.removeItem(atPath: scratch.file("zeros.debug"))
        let out = try runProcess(
            TestPaths.stackline, ["symbols", "add", "--symbols", scratch.file("store"), scratch.file("bomb.zip")],
            environment: ProcessInfo.processInfo.environment.merging(["STACKLINE_UNZIP_MAX_BYTES": "1048576"]) { $1 })
        #expect(out.status != 0)
        #expect(out.stderr.contains("would unpack to 67108864 bytes"), "\(out.stderr)")
        #expect(directorySnapshot(scratch.file("store")).isEmpty)
    }

    @Test func fatExecutableThenDSYMThenEverythingAgain() throws {
        let root = try TempDirectory("store")
        defer { root.remove() }
        let store = SymbolStoreDirectory(root: root.path)
        #expect(throws: StoreError.self) { try store.add(path: MachOFixtures.executable) }

        let first = try store.addFile(path: MachOFixtures.executable)
        #expect(first.count == 2 && first.allSatisfy { if case .stored = $0 { true } else { false } }, "\(first)")
        let uuids = try MachOFixtures.uuids(MachOFixtures.executable)
        for (arch, uuid) in uuids {
            let entry = try #require(store.entry(buildID: BuildID(uuid)))
            #expect(entry.arch.name == arch && entry.kind == "executable" && !entry.hasDWARF && entry.hasSymbolTable, "\(entry)")
            let exe = try #require(store.executablePath(buildID: BuildID(uuid)), "executable role not filled for \(arch)")
            #expect(contents(exe) == (try lipoThin(MachOFixtures.executable, arch: arch, into: root)))
        }

        // The dSYM has the same UUIDs and more: it replaces the symbol-table-only .debug.
        let second = try store.addFile(path: MachOFixtures.dSYMDWARF)
        #expect(second.allSatisfy { if case .upgraded = $0 { true } else { false } }, "\(second)")
        for uuid in uuids.values {
            let entry = try #require(store.entry(buildID: BuildID(uuid)))
            #expect(entry.hasDWARF && entry.executablePath != nil, "\(entry)")
        }

        // Adding anything again, in either order, changes nothing.
        let before = directorySnapshot(root.path)
        for path in [MachOFixtures.executable, MachOFixtures.dSYM, MachOFixtures.dSYMDWARF] {
            for (label, result) in store.addTree(path: path) {
                guard case .success(.kept) = result else { Issue.record("\(label): \(result) is not a no-op"); continue }
            }
        }
        #expect(directorySnapshot(root.path) == before)
    }
}
