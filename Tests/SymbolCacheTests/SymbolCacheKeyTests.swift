import DebugInfo
import Demangling
import Foundation
import SymbolCache
import TestSupport
import Testing

/// A symcache's key holds everything its answers depend on (issue 29 §3): the debug file and the
/// executable given beside it. Names are stored mangled (issue 31), so the demanglers are not in
/// it; `SymbolCacheVersions` says why each format version exists.
@Suite struct SymbolCacheKeyTests {
    /// Names are stored once, as the file has them, and demangled at lookup (format version 3):
    /// each code symbol of the fixture (binutils `nm`) that names its own address comes back
    /// mangled as `symbol`, its C++ full name is what binutils `c++filt` prints, and no
    /// demangled form of a mangled name is anywhere in the file's bytes.
    @Test(arguments: ["c-gcc-pie", "cpp-clang", "swift-O"])
    func namesAreStoredMangledAndDemangledAtLookup(fixtureName: String) throws {
        let fixture = try sharedElfFixtures.get().named(fixtureName)
        let scratch = try TempDirectory("stackline-symcache-key")
        defer { scratch.remove() }
        let path = scratch.file("file.symcache")
        let key = SymbolCacheKey(source: try SymbolCacheSource(file: RegularFile(path: fixture.unstripped)))
        try SymbolCache.write(from: DebugFile.open(path: fixture.unstripped), key: key, to: path)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let cache = try SymbolCache(path: path, expecting: key)

        var mangled: [(name: String, address: UInt64)] = []
        for line in try runChecked(try findTool("nm"), ["--defined-only", fixture.unstripped]).stdout.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count == 3, words[1] == "T" || words[1] == "t", let address = UInt64(words[0], radix: 16) else { continue }
            if words[2].hasPrefix("$s") || words[2].hasPrefix("_Z") { mangled.append((String(words[2]), address)) }
        }
        let cxx = mangled.filter { $0.name.hasPrefix("_Z") }
        let filtered = cxx.isEmpty ? [] : try runChecked(try findTool("c++filt"), cxx.map(\.name)).stdout.split(separator: "\n").map(String.init)
        try #require(filtered.count == cxx.count)
        let cxxNames = Dictionary(zip(cxx.map(\.name), filtered), uniquingKeysWith: { a, _ in a })
        var named = 0
        for (name, address) in mangled {
            guard let outer = cache.frames(at: address).last, outer.source.symbol == name else { continue }
            named += 1
            if let expected = cxxNames[name] { #expect(outer.fullName == expected, "c++filt: \(expected)") }
            for style in Demangler.Style.allCases {
                let demangled = Demangler.demangle(name, style: style)
                // Long enough not to be a piece of a path or of another name by chance.
                guard demangled != name, demangled.utf8.count > 24 else { continue }
                #expect(bytes.firstRange(of: Array(demangled.utf8)) == nil, "\(fixtureName): \(demangled) is stored")
            }
        }
        if fixtureName != "c-gcc-pie" { #expect(named > 0, "\(fixtureName): no mangled symbol names its own address") }
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
