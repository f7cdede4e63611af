import DebugInfo
import Foundation
import SymbolCache
import TestSupport
import Testing

/// The `symcache` fuzz target's seeds: symcaches of the committed Mach-O fixtures, so they need
/// no build. After a format change, `STACKLINE_WRITE_SYMCACHE_SEEDS=1 swift test --filter
/// SymbolCacheSeedTests` rewrites them; otherwise each must still open and answer.
@Suite struct SymbolCacheSeedTests {
    static let directory = packageRoot + "/Tests/Fixtures/fuzz-seeds/symcache"

    @Test func seedsAreCurrentSymcaches() throws {
        let fixtures = [("dylib", MachOFixtures.dylibDWARF), ("sample-dsym", MachOFixtures.dSYMDWARF), ("sample", MachOFixtures.executable)]
        if ProcessInfo.processInfo.environment["STACKLINE_WRITE_SYMCACHE_SEEDS"] == "1" {
            try FileManager.default.createDirectory(atPath: Self.directory, withIntermediateDirectories: true)
            for (name, path) in fixtures {
                let source = try SymbolCacheSource(file: RegularFile(path: path))
                for slice in try MachOFile(path: path).slices {
                    try SymbolCache.write(from: DebugFile(machO: path, arch: slice.arch), key: SymbolCacheKey(source: source), to: "\(Self.directory)/\(name)-\(slice.arch).symcache")
                }
            }
        }
        let seeds = try FileManager.default.contentsOfDirectory(atPath: Self.directory).filter { $0.hasSuffix(".symcache") }
        #expect(seeds.count >= 4)
        for seed in seeds {
            let path = Self.directory + "/" + seed
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let key = try #require(SymbolCache.recordedKey(bytes))
            let cache = try SymbolCache(path: path, expecting: key)
            #expect(cache.segmentCount > 0, "\(seed)")
            #expect(bytes.count < 64 << 10, "\(seed): big seeds slow every mutation")
        }
    }
}
