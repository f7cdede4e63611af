import DebugInfo
import Demangling
import Foundation
import JSONFormat
import ReportModel
import SymbolCache
import Symbolication
import TestSupport
import Testing

/// `lookup --json` written from a symcache's mapped bytes is byte for byte what the DWARF path's
/// `AddressResolver` frames give through `LookupJSON`, whose bytes `LookupJSONTests` holds to
/// JSONEncoder: every byte of code of the Mach-O fixtures, both name styles, plain and return
/// addresses (the offset is measured from the looked-up address).
@Suite struct SymbolCacheLookupJSONTests {
    @Test(arguments: [MachOFixtures.dSYMDWARF, MachOFixtures.dylibDWARF, MachOFixtures.executable])
    func symcacheEntriesMatchTheDWARFPath(path: String) throws {
        let scratch = try TempDirectory("stackline-symcache-json")
        defer { scratch.remove() }
        for slice in try MachOFile(path: path).slices {
            let cachePath = scratch.file("\(slice.arch).symcache")
            let source = try SymbolCacheSource(file: RegularFile(path: path))
            try SymbolCache.write(from: DebugFile(machO: path, arch: slice.arch), key: SymbolCacheKey(source: source), to: cachePath)
            let cache = try SymbolCache(path: cachePath, expecting: SymbolCacheKey(source: source))
            let file = try DebugFile(machO: path, arch: slice.arch)
            let code = slice.sections.filter { $0.flags & 0x8000_0400 != 0 }
            #expect(!code.isEmpty)
            for style in Demangler.Style.allCases {
                let resolver = AddressResolver(file: file, names: DemangledNames(style: style))
                var mismatches = 0
                for section in code {
                    for address in section.address...(section.address + section.size) {
                        for kind in [FrameKind.pc, .returnAddress] {
                            var expected = JSONBytes()
                            LookupJSON.appendEntry(address: address, frames: resolver.resolve(address, kind: kind), to: &expected)
                            var got = JSONBytes()
                            let lookup = kind == .returnAddress ? address - 1 : address
                            LookupJSON.appendEntry(address: address, lookup: lookup, cache: cache, style: style, to: &got)
                            if got.bytes != expected.bytes {
                                mismatches += 1
                                if mismatches < 4 { Issue.record("\(slice.arch) \(style) 0x\(String(address, radix: 16)): \(String(decoding: got.bytes, as: UTF8.self)) vs \(String(decoding: expected.bytes, as: UTF8.self))") }
                            }
                        }
                    }
                }
                #expect(mismatches == 0, "\(path) \(slice.arch) \(style)")
            }
        }
    }

    /// What a worker resolves through a symcache (`AddressResolver` over `.symcache`, read from the
    /// mapped records) equals the DWARF path's answer, level for level, at every byte of code, in
    /// both name styles, for plain and return addresses: the Mach-O fixtures' slices, then every
    /// ELF fixture (Swift among them, where the two styles differ).
    @Test(arguments: [MachOFixtures.dSYMDWARF, MachOFixtures.dylibDWARF, MachOFixtures.executable])
    func symcacheResolverMatchesTheDWARFPathOnMachO(path: String) throws {
        for slice in try MachOFile(path: path).slices {
            let code = slice.sections.filter { $0.flags & 0x8000_0400 != 0 }.map { $0.address...($0.address + $0.size) }
            try Self.compareResolvers("\(path) \(slice.arch)", sourcePath: path, code: code) {
                try DebugFile(machO: path, arch: slice.arch)
            }
        }
    }

    @Test func symcacheResolverMatchesTheDWARFPathOnELF() throws {
        let set = try sharedElfFixtures.get()
        #expect(set.fixtures.contains { $0.language == "swift" })
        for f in set.fixtures {
            let code = try ElfFile(path: f.unstripped).sections.filter(\.isExecutable).map { $0.address...($0.address + $0.size) }
            let stylesDiffer = try Self.compareResolvers(f.name, sourcePath: f.unstripped, code: code) {
                try DebugFile(path: f.unstripped)
            }
            if f.language == "swift" { #expect(stylesDiffer, "\(f.name): the two name styles never differed") }
        }
    }

    /// Compares the two paths over `code`; returns whether the two name styles named any
    /// function differently (so that a style mixed up would have shown).
    @discardableResult
    private static func compareResolvers(
        _ name: String, sourcePath: String, code: [ClosedRange<UInt64>], open: () throws -> DebugFile
    ) throws -> Bool {
        let scratch = try TempDirectory("stackline-symcache-resolver")
        defer { scratch.remove() }
        let cachePath = scratch.file("file.symcache")
        let source = try SymbolCacheSource(file: RegularFile(path: sourcePath))
        try SymbolCache.write(from: open(), key: SymbolCacheKey(source: source), to: cachePath)
        let cache = try SymbolCache(path: cachePath, expecting: SymbolCacheKey(source: source))
        let file = try open()
        #expect(!code.isEmpty, "\(name): no code")
        let styles = Demangler.Style.allCases
        let dwarf = styles.map { AddressResolver(file: file, names: DemangledNames(style: $0)) }
        let cached = styles.map { AddressResolver(source: .symcache(cache), names: DemangledNames(style: $0)) }
        var mismatches = 0, resolved = 0, stylesDiffer = false
        for range in code {
            for address in range {
                for kind in [FrameKind.pc, .returnAddress] {
                    let expected = dwarf.map { $0.resolve(address, kind: kind) }
                    if !expected[0].isEmpty { resolved += 1 }
                    if Set(expected.map { $0.map(\.function) }).count > 1 { stylesDiffer = true }
                    for (i, style) in styles.enumerated() {
                        let got = cached[i].resolve(address, kind: kind)
                        guard got != expected[i] else { continue }
                        mismatches += 1
                        if mismatches < 4 { Issue.record("\(name) \(style) 0x\(String(address, radix: 16)): \(got) vs \(expected[i])") }
                    }
                }
            }
        }
        #expect(resolved > 0, "\(name): nothing resolved, so nothing was compared")
        #expect(mismatches == 0, "\(name): \(mismatches) answers differ")
        return stylesDiffer
    }

    /// The mapped-bytes overload (a copy when nothing needs escaping) writes what `string(_:)` writes.
    @Test func mappedStringsEscapeAsStrings() {
        let ascii = String(decoding: (0..<0x80).map { UInt8($0) }, as: UTF8.self)
        for text in ["", "main", ascii, "a/b\\c\"d", "tab\there", "Ünïcödé 名前 🧨", "\u{2028}\u{7f}\u{1b}[31m"] {
            var expected = JSONBytes()
            expected.string(text)
            var got = JSONBytes()
            Array(text.utf8).withUnsafeBytes { got.string(utf8: $0) }
            #expect(got.bytes == expected.bytes, "\(text)")
        }
    }

    @Test func decimalSpellsAsString() {
        for v: Int in [0, 1, 9, 10, 99, 100, -1, -10, Int.max, Int.min, 1_234_567] {
            var out: [UInt8] = []
            JSONBytes.decimal(v, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == String(v))
        }
        var out: [UInt8] = []
        JSONBytes.decimal(UInt64.max, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == String(UInt64.max))
    }
}
