import DebugInfo
import Demangling
import Foundation
import SymbolCache
import TestSupport
import Testing

/// The symcache answers exactly what the DWARF path answers, at every byte of code of every
/// fixture (and around every address where an answer changes, and far outside the code).
@Suite struct SymbolCacheAgreementTests {
    /// Writes the symcache of `open()` and compares it with a second, fresh `open()` (the
    /// oracle) at every address; returns how many answer boundaries the builder swept (at least
    /// `SymbolCache.twoPartSweepMinimum`: in two parts, with a seam between them).
    @discardableResult
    static func checkAgreement(_ name: String, sourcePath: String, open: () throws -> DebugFile) throws -> Int {
        let scratch = try TempDirectory("stackline-symcache")
        defer { scratch.remove() }
        let path = scratch.file("file.symcache")
        let source = try SymbolCacheSource(file: RegularFile(path: sourcePath))
        let built = try open()
        try SymbolCache.write(from: built, key: SymbolCacheKey(source: source), to: path)
        let cache = try SymbolCache(path: path, expecting: SymbolCacheKey(source: source))
        let oracleFile = try open()
        let oracle = SymbolCacheOracle(oracleFile)
        #expect(cache.preferredBase == oracleFile.preferredBase, "\(name)")
        #expect(cache.architecture == oracleFile.architecture, "\(name)")
        #expect(cache.isMachO == (oracleFile.machO != nil), "\(name)")
        let boundaries = built.answerBoundaries()
        let addresses = SymbolCacheOracle.addresses(oracleFile, boundaries: boundaries)
        var mismatches = 0
        var answered = 0
        for a in addresses {
            let expected = oracle.frames(at: a)
            let got = cache.frames(at: a)
            if !expected.isEmpty { answered += 1 }
            if got != expected {
                mismatches += 1
                if mismatches <= 5 { Issue.record("\(name) at 0x\(String(a, radix: 16)): symcache \(got), DWARF path \(expected)") }
            }
            // The zero-copy visitor hands out the same levels.
            var visited: [CachedFrame] = []
            cache.visitFrames(at: a) { f in
                visited.append(CachedFrame(
                    source: SourceFrame(symbol: f.symbol?.string, file: f.file?.string, line: f.line, column: f.column,
                                        functionStart: f.functionStart, fromSymbolTableOnly: f.fromSymbolTableOnly),
                    fullName: f.fullName?.string, simplifiedName: f.simplifiedName?.string))
                #expect(f.count == got.count && f.isOutermost == (f.index == got.count - 1))
            }
            #expect(visited == got, "\(name) at 0x\(String(a, radix: 16)): visitor disagrees")
        }
        #expect(mismatches == 0, "\(name): \(mismatches) of \(addresses.count) addresses differ")
        // Proves the comparison covered real answers, not only "??".
        #expect(answered > 0, "\(name): no address had an answer")
        print("[symcache] \(name): \(addresses.count) addresses, \(answered) answered, \(cache.segmentCount) segments, \(cache.functionCount) functions, \((try? FileManager.default.attributesOfItem(atPath: path)[.size]) ?? 0) bytes; \(mismatches) mismatches")
        return boundaries.count
    }

    @Test("every ELF fixture: the binary, and the debug file with its stripped companion")
    func elfFixtures() throws {
        let set = try sharedElfFixtures.get()
        #expect(set.fixtures.contains { $0.language == "swift" }, "a Swift binary is among the fixtures")
        var sweptInTwoParts = 0
        for f in set.fixtures {
            let boundaries = try Self.checkAgreement(f.name, sourcePath: f.unstripped) { try DebugFile(path: f.unstripped) }
            if boundaries >= SymbolCache.twoPartSweepMinimum { sweptInTwoParts += 1 }
            if let debug = f.debugFile {
                let companion = try f.stripped.map { try ElfFile(path: $0) }
                try Self.checkAgreement(f.name + ".debug", sourcePath: debug) { try DebugFile(path: debug, symbolsFrom: companion) }
            }
        }
        // The seam between the two parts is among the addresses compared.
        #expect(sweptInTwoParts >= set.fixtures.count / 2, "\(sweptInTwoParts) of \(set.fixtures.count) fixtures were swept in two parts")
    }

    @Test("every slice of every Mach-O fixture", arguments: [MachOFixtures.executable, MachOFixtures.dSYMDWARF, MachOFixtures.dylibDWARF])
    func machOFixtures(path: String) throws {
        for slice in try MachOFile(path: path).slices {
            try Self.checkAgreement("\(path.split(separator: "/").last!) \(slice.arch)", sourcePath: path) {
                try DebugFile(machO: path, arch: slice.arch)
            }
        }
    }
}
