import Foundation
import ReportFormats
import ReportModel
import TestSupport
import Testing

/// Every build-id and architecture spelling the fixtures hold goes through `BuildID` and `Arch`,
/// and what they make of it matches an oracle: Foundation's own string operations for ids,
/// llvm-objdump for Mach-O CPU types and ELF machines, and for report names the meaning the
/// writers document (Apple's Code Type, Android's ABI names, the SDK's `arm64 v8`).
@Suite struct IdentifierSpellingTests {
    /// Text fixtures: the wild reports, the fuzz seeds and crashes, and the shared copy of the wild set.
    static let fixtureTexts: [(path: String, text: String)] = {
        let roots = [packageRoot + "/Tests/Fixtures", packageRoot + "/../shared/fixtures/wild"]
        var out: [(String, String)] = []
        for root in roots {
            guard let walker = FileManager.default.enumerator(atPath: root) else { continue }
            // ndk-stack's test input carries deliberately wrong ids (`BuildId: bad012345`), and
            // GCC's ASan runtime prints none.
            let idless = ["ndk-stack-backtrace.txt", "gcc-heap-use-after-free.txt"]
            for case let relative as String in walker where !relative.hasPrefix("macho/") && !idless.contains(where: relative.hasSuffix) {
                let path = root + "/" + relative
                guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else { continue }
                out.append((path, text))
            }
        }
        return out.sorted { $0.0 < $1.0 }
    }()

    static func matches(_ pattern: String, in text: String) -> [String] {
        let regex = try! NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
            Range($0.range(at: 1), in: text).map { String(text[$0]) }
        }
    }

    /// Id spellings and the byte counts their format allows.
    static let idSpellings: [(spelling: String, lengths: BuildID.Lengths)] = {
        var out: [(String, BuildID.Lengths)] = []
        for (_, text) in fixtureTexts {
            for s in matches(#""(?:uuid|app_uuid|binaryUUID|object_uuid)"\s*:\s*"([^"]*)""#, in: text) { out.append((s, .appleReport)) }
            for s in matches(#"<([0-9A-Fa-f-]{16,})>"#, in: text) { out.append((s, .appleReport)) }
            for s in matches(#""build_?[iI]d"\s*:\s*"([^"]*)""#, in: text) { out.append((s, .gnu)) }
            for s in matches(#"BuildId: ([0-9A-Fa-f]+)"#, in: text) { out.append((s, .gnu)) }
            for s in matches(#"–0x[0-9a-f]+ ([0-9a-f]+) "#, in: text) { out.append((s, .gnu)) }
        }
        return out
    }()

    @Test func everyFixtureIDSpellingNormalisesAsFoundationDoes() throws {
        #expect(Self.idSpellings.count > 1000, "the fixtures hold more ids than the patterns found")
        #expect(Set(Self.idSpellings.map { $0.spelling.contains("-") }) == [true, false], "both dashed and plain ids")
        for (spelling, lengths) in Self.idSpellings {
            let oracle = spelling.replacingOccurrences(of: "-", with: "").lowercased()
            let id = try BuildID(spelling, lengths: lengths)
            #expect(id.hex == oracle, "\(spelling)")
            #expect(try BuildID(spelling.uppercased(), lengths: .anyByteCount) == id)
            #expect(try BuildID("{\(spelling)} ", lengths: lengths) == id)
            #expect(id.byteCount * 2 == oracle.count)
            // Round trip through JSON as a plain string.
            let json = try JSONEncoder().encode([id])
            #expect(String(decoding: json, as: UTF8.self) == "[\"\(oracle)\"]")
            #expect(try JSONDecoder().decode([BuildID].self, from: json) == [id])
        }
    }

    @Test func buildIDsRefuseWhatIsNoBuildID() throws {
        #expect(throws: BuildIDError.notHexadecimal("hello-world-deadbeef")) { try BuildID("hello-world-deadbeef") }
        #expect(throws: BuildIDError.notHexadecimal("ab cd ef 01")) { try BuildID("ab cd ef 01") }
        #expect(throws: BuildIDError.empty) { try BuildID("  ") }
        #expect(throws: BuildIDError.length("abc", digits: 3, expected: .anyByteCount)) { try BuildID("abc") }
        #expect(throws: BuildIDError.length("-", digits: 0, expected: .gnu)) { try BuildID("-", lengths: .gnu) }
        let short = String(repeating: "ab", count: 15)
        #expect(throws: BuildIDError.length(short, digits: 30, expected: .appleReport)) { try BuildID(short, lengths: .appleReport) }
        #expect(BuildIDError.length(short, digits: 30, expected: .appleReport).description == "id '\(short)' has 30 hex digits, expected 16, 20 bytes")
        for bytes in 1...40 {
            let hex = String(repeating: "5a", count: bytes)
            #expect(((try? BuildID(hex, lengths: .gnu)) != nil) == ([8, 16, 20, 32].contains(bytes)), "\(bytes) bytes")
            #expect(((try? BuildID(hex, lengths: .machO)) != nil) == ((bytes == 16)), "\(bytes) bytes")
            #expect(((try? BuildID(hex, lengths: .appleReport)) != nil) == ([16, 20].contains(bytes)), "\(bytes) bytes")
            #expect(((try? BuildID(hex, lengths: .anyByteCount)) != nil) == ((bytes >= 2)), "\(bytes) bytes")
        }
        #expect(try BuildID(String(repeating: "0", count: 32), lengths: .machO).isUnknown)
        #expect(try !BuildID("00000000000000000000000000000001", lengths: .machO).isUnknown)
        #expect(BuildID(bytes: [0x4c, 0x4c, 0x44, 0xa1, 0x00, 0xff]).hex == "4c4c44a100ff")
        // Stored JSON decodes leniently: an id of a length no format has still reads back.
        #expect(try JSONDecoder().decode([BuildID].self, from: Data(#"["ABC", ""]"#.utf8)).map(\.hex) == ["abc", ""])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([BuildID].self, from: Data(#"["xyz"]"#.utf8)) }
    }

    /// Every parser hands out the ids the oracle makes of the spellings in its input.
    @Test func parsersReportTheNormalisedIDs() throws {
        var checked = 0
        for (path, text) in Self.fixtureTexts {
            let data = Data(text.utf8)
            guard !path.contains("fuzz-crashes"), let format = FormatRegistry.standard.detect(data),
                let report = try? format.parse(data)
            else { continue }
            let ids = Set(report.images.compactMap { $0.id?.hex })
            let spelled = Set(Self.idSpellings.filter { text.contains($0.spelling) }.map { $0.spelling.replacingOccurrences(of: "-", with: "").lowercased() })
            #expect(ids.isSubset(of: spelled), "\(path): \(ids.subtracting(spelled).sorted())")
            // Samples whose images carry no id: a KSCrash memory termination lists no images, the
            // hang's images come from its frames, which name no object_uuid, and the Android 11
            // tombstone with ASan prints no BuildId (nor does its ASan runtime).
            let idless = ["kscrash/oom.json", "kscrash/Hang-main-thread.json", "/tombstone-asan-heap-use-after-free.txt"]
            #expect(!ids.isEmpty || idless.contains { path.hasSuffix($0) }, "\(path)")
            checked += 1
        }
        #expect(checked >= 8)
    }

    /// Architecture spellings reports write, and what their writers document them to mean.
    static let reportArchNames: [String: Arch.CPU] = [
        // Apple .crash "Code Type" and IPS "cpuType" (TN2151): X86-64, ARM-64, ARM-64E, X86, ARM.
        "X86-64": .x86_64, "ARM-64": .arm64, "ARM-64E": .arm64e, "X86": .i386, "ARM": .arm,
        // Android ABIs (tombstone "ABI:" lines).
        "arm64": .arm64, "arm": .arm, "x86": .i386, "x86_64": .x86_64, "riscv64": .riscv64,
        // The SDK's lag reports ("arm64 v8": ARMv8 arm64) and Apple image arch columns.
        "arm64 v8": .arm64, "arm64e v8": .arm64e, "arm64e": .arm64e, "(x86_64)": .x86_64,
        // KSCrash's system.cpu_arch (CrashInHandler.json, an iPhone 4 of 2011).
        "armv7": .armv7,
    ]

    @Test func everyFixtureArchSpellingResolves() throws {
        var spellings: Set<String> = []
        for (_, text) in Self.fixtureTexts {
            for pattern in [
                #"Code Type:\s+(\S+)"#, #"ABI: '([^']*)'"#, #""(?:arch|cpu_arch|cpuType|architecture)"\s*:\s*"([^"]*)""#,
                #"Platform: (\S+)"#, #"0x[0-9a-f]+ +\+?\S+ (\(x86_64\)|x86_64|arm64e?) "#,
            ] {
                spellings.formUnion(Self.matches(pattern, in: text))
            }
        }
        #expect(spellings.count >= 8)
        for spelling in spellings {
            let name = spelling.trimmingCharacters(in: CharacterSet(charactersIn: "()"))
            let expected = try #require(Self.reportArchNames[spelling] ?? Self.reportArchNames[name], "no documented meaning for \(spelling)")
            #expect(Arch(name).cpu == expected, "\(spelling)")
            #expect(Arch(name).canonical.name == expected.rawValue)
            // Carried verbatim: JSON written before Arch existed reads back unchanged.
            let json = try JSONEncoder().encode([Arch(name)])
            #expect(String(decoding: json, as: UTF8.self) == "[\"\(name)\"]")
            #expect(try JSONDecoder().decode([Arch].self, from: json).map(\.name) == [name])
        }
        for (name, cpu) in Self.reportArchNames { #expect(Arch(name.trimmingCharacters(in: CharacterSet(charactersIn: "()"))).cpu == cpu, "\(name)") }
        // An unknown name is kept, not refused.
        let odd = try JSONDecoder().decode(Arch.self, from: Data(#""vax11""#.utf8))
        #expect(odd.name == "vax11" && odd.cpu == nil && !odd.isKnown)
    }

    // MARK: Mach-O CPU types: llvm-objdump names them

    /// (cputype, cpusubtype) pairs of <mach/machine.h>, and those the KSCrash fixtures carry.
    static var machOPairs: [(Int64, Int64)] {
        var pairs: [(Int64, Int64)] = [
            (7, 3), (0x0100_0007, 3), (0x0100_0007, 8),  // CPU_TYPE_X86 _ALL; X86_64 _ALL, _H
            (12, 0), (12, 6), (12, 9), (12, 10), (12, 11), (12, 12), (12, 14), (12, 15), (12, 16),  // ARM _ALL, V6, V7, V7F, V7S, V7K, V6M, V7M, V7EM
            (0x0100_000c, 0), (0x0100_000c, 1), (0x0100_000c, 2),  // ARM64 _ALL, _V8, E
            (0x0200_000c, 0), (0x0200_000c, 1),  // ARM64_32 _ALL, _V8
            (18, 0), (0x0100_0012, 0),  // POWERPC, POWERPC64
        ]
        for (path, text) in fixtureTexts where path.hasSuffix(".json") && path.contains("kscrash") {
            guard let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) else { continue }
            func walk(_ any: Any) {
                if let dict = any as? [String: Any] {
                    if let type = (dict["cpu_type"] as? NSNumber)?.int64Value, let sub = (dict["cpu_subtype"] as? NSNumber)?.int64Value,
                        !pairs.contains(where: { $0 == (type, sub) })
                    {
                        pairs.append((type, sub))
                    }
                    dict.values.forEach(walk)
                } else if let list = any as? [Any] {
                    list.forEach(walk)
                }
            }
            walk(json)
        }
        return pairs
    }

    @Test func machOCPUTypesAreNamedAsLLVMNamesThem() throws {
        let pairs = Self.machOPairs
        // A fat header listing every pair: llvm-objdump --universal-headers names each entry.
        var header = Data()
        func be(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { header.append(contentsOf: $0) } }
        be(0xcafe_babe)
        be(UInt32(pairs.count))
        for (i, (type, sub)) in pairs.enumerated() {
            be(UInt32(truncatingIfNeeded: type)); be(UInt32(truncatingIfNeeded: sub)); be(UInt32(4096 * (i + 1))); be(32); be(12)
        }
        header.append(Data(count: 4096 * (pairs.count + 1) - header.count))
        let dir = try TempDirectory()
        defer { dir.remove() }
        let fat = dir.file("archs")
        try header.write(to: URL(fileURLWithPath: fat))
        let out = try runProcess(try findTool(anyOf: ["llvm-objdump-14", "llvm-objdump"]), ["--macho", "--universal-headers", fat])
        let names = out.stdout.split(separator: "\n").filter { $0.hasPrefix("architecture") }.map { $0.dropFirst("architecture".count).trimmingCharacters(in: .whitespaces) }
        try #require(names.count == pairs.count, "\(out.stdout)\(out.stderr)")
        var named = 0
        for ((type, sub), llvm) in zip(pairs, names) {
            let ours = Arch(machOCPUType: type, subtype: sub)
            #expect(ours.isKnown, "cpu_type \(type) subtype \(sub)")
            // llvm-objdump leaves generic subtypes (ARM_ALL, ARM64_V8, ARM64_32_ALL) unnamed.
            if !llvm.isEmpty {
                #expect(ours.name == llvm, "cpu_type \(type) subtype \(sub)")
                named += 1
            }
        }
        #expect(named >= 15)
        // The capability bits in the subtype's top byte do not change the architecture.
        #expect(Arch(machOCPUType: 0x0100_000c, subtype: Int32(bitPattern: 0x8000_0002)) == Arch(.arm64e))
        #expect(Arch(machOCPUType: 99, subtype: 1).name == "cpu-99-1")
        // Every CPU of the table that Mach-O has is reached from some pair.
        let reached = Set(pairs.compactMap { Arch(machOCPUType: $0.0, subtype: $0.1).cpu })
        #expect(Set(Arch.CPU.allCases).subtracting(reached) == [.riscv64, .s390x])
    }

    // MARK: ELF machines: llvm-objdump -f names them

    @Test func elfMachinesAreNamedAsLLVMNamesThem() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let objdump = try findTool(anyOf: ["llvm-objdump-14", "llvm-objdump"])
        // EM_386, EM_ARM, EM_X86_64, EM_AARCH64, EM_RISCV, EM_PPC, EM_PPC64, EM_S390; big-endian where the CPU is.
        let machines: [(UInt16, bigEndian: Bool)] = [(3, false), (40, false), (62, false), (183, false), (243, false), (20, true), (21, true), (22, true)]
        var reached: Set<Arch.CPU> = []
        for (machine, big) in machines {
            var elf = Data([0x7f, 0x45, 0x4c, 0x46, 2, big ? 2 : 1, 1, 0] + [UInt8](repeating: 0, count: 8))
            func put16(_ v: UInt16) { withUnsafeBytes(of: big ? v.bigEndian : v.littleEndian) { elf.append(contentsOf: $0) } }
            put16(1)  // ET_REL
            put16(machine)
            elf.append(Data(count: 64 - elf.count))
            elf[52] = big ? 0 : 64; elf[53] = big ? 64 : 0  // e_ehsize
            elf[58] = big ? 0 : 64; elf[59] = big ? 64 : 0  // e_shentsize
            let path = dir.file("m\(machine).o")
            try elf.write(to: URL(fileURLWithPath: path))
            let out = try runChecked(objdump, ["-f", path])
            let llvm = try #require(Self.matches(#"architecture: (\S+)"#, in: out.stdout).first, "\(out.stdout)")
            let ours = Arch(elfMachine: machine)
            #expect(ours.cpu != nil && ours.cpu == Arch(llvm).cpu, "e_machine \(machine): ours \(ours), llvm \(llvm)")
            #expect(ours.elfMachine == machine)
            if let cpu = ours.cpu { reached.insert(cpu) }
        }
        #expect(reached == [.i386, .arm, .x86_64, .arm64, .riscv64, .ppc, .ppc64, .s390x])
        #expect(Arch(elfMachine: 8).name == "elf-machine-8")
    }
}
