import DebugInfo
import Demangling
import Foundation
import SymbolCache
import TestSupport
import Testing

/// A symcache's key holds everything its answers depend on (issue 29 §3): the debug file, the
/// executable given beside it, and the build of each demangler whose names it stores, and only
/// those; `SymbolCacheVersions` says why each format version exists.
@Suite struct SymbolCacheKeyTests {
    /// The demanglers recorded are the ones the fixture's names need, read by binutils `nm`
    /// (code symbols with a Swift or an Itanium prefix), with this process's identities; a
    /// demangler of another build refuses the symcache only when its names are in it.
    @Test(arguments: ["c-gcc-pie", "cpp-clang", "swift-O"])
    func recordedDemanglersAreTheOnesItsNamesNeed(fixtureName: String) throws {
        let fixture = try sharedElfFixtures.get().named(fixtureName)
        let scratch = try TempDirectory("stackline-symcache-key")
        defer { scratch.remove() }
        let path = scratch.file("file.symcache")
        let key = SymbolCacheKey(source: try SymbolCacheSource(file: RegularFile(path: fixture.unstripped)))
        try SymbolCache.write(from: DebugFile.open(path: fixture.unstripped), key: key, to: path)
        let recorded = try #require(SymbolCache.recordedKey(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))))

        let symbols = try runChecked(try findTool("nm"), ["--defined-only", fixture.unstripped]).stdout
        var expected: Set<Demangler.Family> = []
        for line in symbols.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count == 3, words[1] == "T" || words[1] == "t" else { continue }
            if words[2].hasPrefix("$s") { expected.insert(.swift) }
            if words[2].hasPrefix("_Z") { expected.insert(.cxx) }
        }
        #expect(recorded.usedDemanglers == expected, "\(fixtureName): nm's code symbols need \(expected)")
        #expect(recorded.source == key.source && recorded.companion == nil)
        for family in Demangler.Family.allCases {
            if expected.contains(family) {
                #expect(recorded.demanglers[family] == DemanglerVersions.current[family])
                #expect(recorded.demanglers[family] != .unknown, "\(family): this process's demangler was not identified")
            }
            var other = key
            other.demanglers[family] = DemanglerIdentity(bytes: [1] + Array(repeating: 0xAB, count: 20))
            do throws(SymbolCacheError) {
                _ = try SymbolCache(path: path, expecting: other)
                #expect(!expected.contains(family), "\(fixtureName): opened with another \(family) demangler, whose names it holds")
            } catch {
                #expect(expected.contains(family), "\(fixtureName): refused for a \(family) demangler it does not use: \(error)")
                #expect(error == .otherDemangler(path: path, family: family, recorded: recorded.demanglers[family], current: other.demanglers[family]))
            }
        }
    }

    /// The identity is the GNU build id of the library this process has mapped, as binutils
    /// `readelf` reads it from the file `/proc/self/maps` names.
    @Test func theIdentityIsTheMappedLibrarysBuildID() throws {
        // Read by cat: Foundation sees a /proc file's size as 0 and may stop early.
        let maps = try runChecked("/bin/cat", ["/proc/\(ProcessInfo.processInfo.processIdentifier)/maps"]).stdout
        let mapped = Set(maps.split(separator: "\n").compactMap { line in line.split(separator: " ", omittingEmptySubsequences: true).last.map(String.init) })
        for (family, library) in [(Demangler.Family.swift, "/libswiftCore.so"), (.cxx, "/libstdc++.so")] {
            let path = try #require(mapped.first { $0.contains(library) }, "\(library) is not mapped in the test process")
            let buildID = try #require(try readelfBuildID(path), "\(path) has no build id")
            #expect(DemanglerVersions.current[family].description == "build-id \(buildID)", "\(family): \(path)")
        }
    }

    /// The executable given beside the debug file is part of the key: none where one was, one
    /// where none was, or another one, is `.otherExecutable`.
    @Test func anotherExecutableIsRefused() throws {
        let scratch = try TempDirectory("stackline-symcache-key")
        defer { scratch.remove() }
        let path = scratch.file("file.symcache")
        let source = try SymbolCacheSource(file: RegularFile(path: MachOFixtures.dSYMDWARF))
        let executable = try SymbolCacheSource(file: RegularFile(path: MachOFixtures.executable))
        let key = SymbolCacheKey(source: source, companion: executable)
        try SymbolCache.write(from: DebugFile(machO: MachOFixtures.dSYMDWARF, arch: "arm64", symbolsFrom: MachOFixtures.executable), key: key, to: path)
        _ = try SymbolCache(path: path, expecting: key)
        var moved = executable
        moved.inode += 1
        for other in [SymbolCacheKey(source: source), SymbolCacheKey(source: source, companion: moved)] {
            do throws(SymbolCacheError) {
                _ = try SymbolCache(path: path, expecting: other)
                Issue.record("opened with \(String(describing: other.companion)) beside it")
            } catch {
                #expect(error == .otherExecutable(path: path))
            }
        }
    }

    /// The header's version is the last entry of the versions record, which counts up from 1
    /// and gives a reason for every entry.
    @Test func theHeaderVersionIsTheLastEntryOfTheRecord() throws {
        let history = SymbolCacheVersions.history
        #expect(history.map(\.version) == Array(1...UInt32(history.count)))
        #expect(history.allSatisfy { $0.reason.count > 40 }, "every bump says why")
        let scratch = try TempDirectory("stackline-symcache-key")
        defer { scratch.remove() }
        let path = scratch.file("file.symcache")
        let key = SymbolCacheKey(source: try SymbolCacheSource(file: RegularFile(path: MachOFixtures.dylibDWARF)))
        try SymbolCache.write(from: DebugFile(machO: MachOFixtures.dylibDWARF, arch: "arm64"), key: key, to: path)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        // The little-endian word after the 8-byte magic (docs/symcache.md, "Layout").
        let version = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[8 + $1]) << (8 * $1) }
        #expect(version == history.last?.version)
        #expect(SymbolCache.formatVersion == version)
    }

    /// A real version-1 symcache (the 128-byte header, committed from before the key grew) is
    /// another version, not a truncated or corrupt file: the store rebuilds it.
    @Test func aVersion1SymcacheIsAnotherVersion() throws {
        let path = packageRoot + "/Tests/Fixtures/symcache-v1/libgeometry-arm64.symcache"
        let source = try SymbolCacheSource(file: RegularFile(path: MachOFixtures.dylibDWARF))
        do throws(SymbolCacheError) {
            _ = try SymbolCache(path: path, expecting: SymbolCacheKey(source: source))
            Issue.record("a version-1 symcache opened")
        } catch {
            #expect(error == .unsupportedVersion(path: path, found: 1))
        }
    }
}
