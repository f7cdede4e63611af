import DebugInfo
import Foundation
import ReportModel
import SymbolStore
import TestSupport
import Testing

@Suite struct SymbolStoreTests {
    let fixtures: ElfFixtureSet
    init() throws { fixtures = try sharedElfFixtures.get() }

    func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    @Test(arguments: [false, true])
    func strippedAndDebugFileEndWithDWARFAndSymbols(debugFirst: Bool) throws {
        let fixture = try fixtures.named("c-gcc-pie")
        let store = SymbolStoreDirectory(root: try makeTemporaryDirectory(prefix: "store"))
        let order = debugFirst ? [fixture.debugFile!, fixture.stripped!] : [fixture.stripped!, fixture.debugFile!]
        for path in order { _ = try store.add(path: path) }

        let entry = try #require(store.entry(buildID: BuildID(fixture.buildID!)))
        #expect(entry.hasDWARF && entry.hasSymbolTable, "\(entry)")
        // The stored .debug file is the objcopy --only-keep-debug output, byte for byte.
        let debugPath = try #require(store.debugFilePath(buildID: BuildID(fixture.buildID!)))
        #expect(contents(debugPath) == contents(fixture.debugFile!))
        // The stripped binary keeps the executable role (gdb's .build-id/ab/cdef without suffix).
        let executablePath = try #require(store.executablePath(buildID: BuildID(fixture.buildID!)))
        #expect(contents(executablePath) == contents(fixture.stripped!))
    }

    @Test func addingTheSameFileTwiceChangesNothing() throws {
        let fixture = try fixtures.named("c-clang-pie")
        let root = try makeTemporaryDirectory(prefix: "store")
        let store = SymbolStoreDirectory(root: root)
        guard case .stored = try store.add(path: fixture.unstripped) else { Issue.record("first add did not store"); return }
        // Names, sizes and modification times of everything in the store.
        let before = directorySnapshot(root)
        guard case .kept = try store.add(path: fixture.unstripped) else { Issue.record("second add was not a no-op"); return }
        #expect(directorySnapshot(root) == before)
    }

    @Test func concurrentAddsOfOneBuildIDLeaveOneWholeFile() throws {
        let fixture = try fixtures.named("cpp-gcc")
        let root = try makeTemporaryDirectory(prefix: "store")
        let store = SymbolStoreDirectory(root: root)
        let inputs = Array(repeating: [fixture.stripped!, fixture.debugFile!, fixture.unstripped], count: 6).flatMap { $0 }
        DispatchQueue.concurrentPerform(iterations: inputs.count) { i in
            _ = try? store.add(path: inputs[i])
        }
        let entry = try #require(store.entry(buildID: BuildID(fixture.buildID!)))
        #expect(entry.hasDWARF && entry.hasSymbolTable)
        let storedPath = try #require(store.debugFilePath(buildID: BuildID(fixture.buildID!)))
        let stored = try #require(contents(storedPath))
        // Whichever full-quality file won, it is one of the inputs, whole.
        #expect(stored == contents(fixture.debugFile!) || stored == contents(fixture.unstripped))
        #expect(directorySnapshot(root).allSatisfy { !$0.contains(".tmp-") }, "temporary files left behind")
        #expect(try DebugFile(path: store.debugFilePath(buildID: BuildID(fixture.buildID!))!).unitCount > 0)
    }

    @Test func refusalsNameTheProblemAndLeaveTheStoreAlone() throws {
        let scratch = try makeTemporaryDirectory(prefix: "bad")
        let root = try makeTemporaryDirectory(prefix: "store")
        let store = SymbolStoreDirectory(root: root)
        let text = scratch + "/notes.txt"
        try "not a binary\n".write(toFile: text, atomically: true, encoding: .utf8)
        let full = try #require(contents(try fixtures.named("c-gcc-pie").unstripped))
        let truncated = scratch + "/truncated"
        FileManager.default.createFile(atPath: truncated, contents: full.prefix(full.count / 3))
        let noID = try #require(fixtures.fixtures.first { $0.role == .noBuildID }).unstripped

        let cases: [(String, String)] = [
            (text, "not an ELF file"), (truncated, "truncated ELF file"),
            (noID, "no GNU build-id"), (scratch + "/missing", "cannot read file"),
        ]
        for (path, expected) in cases {
            do {
                _ = try store.add(path: path)
                Issue.record("\(path) was accepted")
            } catch {
                #expect(error.description.contains(expected), "\(path): \(error.description)")
                #expect(!error.description.contains("\n"))
            }
        }
        #expect(directorySnapshot(root).isEmpty, "refused files changed the store: \(directorySnapshot(root))")
    }

    @Test func removeDeletesEveryRole() throws {
        let fixture = try fixtures.named("c-gcc-nopie")
        let root = try makeTemporaryDirectory(prefix: "store")
        let store = SymbolStoreDirectory(root: root)
        _ = try store.add(path: fixture.stripped!)
        _ = try store.add(path: fixture.debugFile!)
        _ = try store.remove(buildID: BuildID(fixture.buildID!))
        #expect(try store.entry(buildID: BuildID(fixture.buildID!)) == nil)
        #expect(try store.debugFilePath(buildID: BuildID(fixture.buildID!)) == nil)
        #expect(try store.executablePath(buildID: BuildID(fixture.buildID!)) == nil)
        #expect(store.list().isEmpty)
        #expect(throws: StoreError.self) { try store.remove(buildID: BuildID(fixture.buildID!)) }
    }
}
