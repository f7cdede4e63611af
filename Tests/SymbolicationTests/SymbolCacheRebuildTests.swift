import Foundation
import ReportModel
import SymbolCache
import SymbolStore
import Symbolication
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `OpenDebugFiles` rebuilds a store's symcache when it is of another format version or its key
/// no longer matches (another demangler build, an executable added beside the debug file) and
/// leaves a matching one alone:
/// each new instance stands for a new process, and the symcache's inode and modification time
/// (from `stat`) tell whether it was written again (the writer renames a new file into place).
@Suite struct SymbolCacheRebuildTests {
    /// A real symcache of an older format version in the store (committed under
    /// Tests/Fixtures/symcache-vN: version 2 written by the issue-29 build, version 3 by the
    /// last build that stored both name styles) is rebuilt once, with a warning, into the bytes
    /// a fresh build writes; one whose key matches is mapped as it is.
    @Test(arguments: [UInt8(2), 3])
    func anOlderFormatVersionRebuildsAndAMatchingKeyDoesNot(version: UInt8) throws {
        try expectRebuilt(warning: "format version \(version)") { _ in
            let older = try read(packageRoot + "/Tests/Fixtures/symcache-v\(version)/libgeometry-arm64.symcache")
            // The little-endian word after the 8-byte magic (docs/symcache.md, "Layout").
            try #require(older.count > 12 && older[8] == version && older[9...11].allSatisfy { $0 == 0 }, "the fixture is format version \(version)")
            return older
        }
    }

    /// A symcache whose recorded C++ demangler is another build (as if written before a
    /// libstdc++ upgrade) is rebuilt once, with a warning, into the bytes a fresh build writes;
    /// one whose key matches is mapped as it is.
    @Test func anotherDemanglerRebuildsAndAMatchingKeyDoesNot() throws {
        try expectRebuilt(warning: "demangled by another C++ ABI library") { intact in
            let recorded = try #require(SymbolCache.recordedKey(intact))
            try #require(recorded.usedDemanglers == [.cxx], "the fixture is C++ (Tests/Fixtures/cpp/geometry.cpp)")
            // The C++ identity's first build-id byte (offset 210: length at 208, tag at 209), resealed.
            var older = intact
            older[210] ^= 0xFF
            return SymbolCache.resealed(older)
        }
    }

    /// Stores the fixture dylib and builds its symcache, and checks that a second lookup leaves
    /// it alone; then writes `replace(the symcache's bytes)` over it and checks that it is
    /// rebuilt once, with one warning containing `warning`, into the bytes of the fresh build,
    /// and left alone after that.
    private func expectRebuilt(warning: String, replacing replace: ([UInt8]) throws -> [UInt8]) throws {
        let store = SymbolStoreDirectory(root: try makeTemporaryDirectory(prefix: "symcache-rebuild"))
        defer { try? FileManager.default.removeItem(atPath: store.root) }
        let id = try #require(try store.addFile(path: MachOFixtures.dylibDWARF).first?.entry.buildId)
        let path = store.symbolCachePath(buildID: id)

        let (built, firstWarnings) = try lookUp(id, in: store)
        #expect(firstWarnings.isEmpty, "\(firstWarnings)")
        let intact = try read(path)

        let (again, warnings) = try lookUp(id, in: store)
        #expect(warnings.isEmpty, "\(warnings)")
        #expect(again == built, "a symcache whose key matches was written again")

        try Data(try replace(intact)).write(to: URL(fileURLWithPath: path))
        let patched = try fileIdentity(path)
        let (rebuilt, rebuildWarnings) = try lookUp(id, in: store)
        #expect(rebuildWarnings.count == 1 && rebuildWarnings.first?.contains(warning) == true, "\(rebuildWarnings)")
        #expect(rebuilt.inode != patched.inode, "not rebuilt")
        #expect(try read(path) == intact, "the rebuilt symcache differs from a fresh build")

        let (settled, settledWarnings) = try lookUp(id, in: store)
        #expect(settledWarnings.isEmpty && settled == rebuilt, "rebuilt again: \(settledWarnings)")
    }

    /// An executable stored after the symcache was built changes the key (its symbol table
    /// answers when the debug file has none): rebuilt once, recording the stored executable's
    /// size and inode as `stat` gives them; then left alone.
    @Test func anExecutableStoredLaterRebuildsOnce() throws {
        let store = SymbolStoreDirectory(root: try makeTemporaryDirectory(prefix: "symcache-rebuild"))
        defer { try? FileManager.default.removeItem(atPath: store.root) }
        let outcomes = try store.addFile(path: MachOFixtures.dSYMDWARF)
        let id = try #require(outcomes.first { $0.entry.arch == "arm64" }?.entry.buildId)
        let path = store.symbolCachePath(buildID: id)
        _ = try lookUp(id, in: store)
        #expect(try #require(SymbolCache.recordedKey(try read(path))).companion == nil)

        _ = try store.addFile(path: MachOFixtures.executable)
        let executable = try #require(store.executablePath(buildID: id), "the executable role was not filled")
        let before = try fileIdentity(path)
        let (after, warnings) = try lookUp(id, in: store)
        #expect(warnings.count == 1 && warnings.first?.contains("another executable") == true, "\(warnings)")
        #expect(after.inode != before.inode, "not rebuilt")
        let companion = try #require(SymbolCache.recordedKey(try read(path))?.companion)
        let stored = try fileIdentity(executable)
        #expect(companion.inode == stored.inode && companion.size == stored.size && companion.modifiedNanoseconds == stored.modified)

        let (settled, settledWarnings) = try lookUp(id, in: store)
        #expect(settledWarnings.isEmpty && settled == after, "rebuilt again: \(settledWarnings)")
    }

    /// A symcache another process is building (it holds the entry's lock, as the upload's
    /// indexer does) is not waited for: the debug file answers at once, and once the symcache
    /// is there the next use switches to it. Had `source` waited, it would have returned only
    /// when the holder let go, with a symcache of its own making.
    @Test func aSymcacheBeingBuiltElsewhereIsNotWaitedFor() throws {
        let store = SymbolStoreDirectory(root: try makeTemporaryDirectory(prefix: "symcache-busy"))
        defer { try? FileManager.default.removeItem(atPath: store.root) }
        let id = try #require(try store.addFile(path: MachOFixtures.dylibDWARF).first?.entry.buildId)
        let (locked, letGo, released) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        Thread {
            _ = try? store.withEntryLock(buildID: id) {
                locked.signal()
                // A guard only: the test lets go as soon as it has its answer.
                _ = letGo.wait(timeout: .now() + 120)
            }
            released.signal()
        }.start()
        locked.wait()
        let files = OpenDebugFiles(stores: [store])
        let first = try files.source(buildID: id)
        letGo.signal()
        released.wait()
        guard case .debugFile = first else {
            Issue.record("waited for the entry lock instead of answering from the debug file")
            return
        }
        #expect(!FileManager.default.fileExists(atPath: store.symbolCachePath(buildID: id)))
        // The holder's build lands (another process writes it, as the indexer does).
        try OpenDebugFiles(stores: [store]).rebuildSymbolCache(buildID: id)
        guard case .symcache = try files.source(buildID: id) else {
            Issue.record("kept answering from the debug file after the symcache was written")
            return
        }
    }

    private struct FileIdentity: Equatable {
        var inode: UInt64
        var size: UInt64
        var modified: Int64
    }

    /// Looks `id` up as a new process would (a fresh `OpenDebugFiles`): the symcache must answer.
    private func lookUp(_ id: BuildID, in store: SymbolStoreDirectory) throws -> (FileIdentity, [String]) {
        var warnings: [String] = []
        let files = OpenDebugFiles(stores: [store], warn: { warnings.append($0.description) })
        guard case .symcache = try files.source(buildID: id) else { throw TestSupportError("\(id) answered without its symcache: \(warnings)") }
        return (try fileIdentity(store.symbolCachePath(buildID: id)), warnings)
    }

    private func fileIdentity(_ path: String) throws -> FileIdentity {
        var info = stat()
        guard stat(path, &info) == 0 else { throw TestSupportError("stat \(path): errno \(errno)") }
        return FileIdentity(
            inode: UInt64(info.st_ino), size: UInt64(info.st_size),
            modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    private func read(_ path: String) throws -> [UInt8] { try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) }
}
