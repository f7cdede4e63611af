import Foundation
import TestSupport
import Testing

/// Build-ids and architectures have one definition each (`BuildID`, `Arch` in ReportModel):
/// no other source file spells an id by hand or keeps its own table of CPU types, and the
/// places that used to do so now go through the types.
@Suite struct OneNormaliserTests {
    static let owners: Set<String> = ["Sources/ReportModel/BuildID.swift", "Sources/ReportModel/Arch.swift"]

    /// Every Swift source of the product (Sources/ and Workers/), by package-relative path.
    static func sources() throws -> [(path: String, lines: [Substring])] {
        var out: [(String, [Substring])] = []
        for root in ["Sources", "Workers"] {
            let walker = try #require(FileManager.default.enumerator(atPath: packageRoot + "/" + root))
            for case let relative as String in walker where relative.hasSuffix(".swift") {
                let path = root + "/" + relative
                let text = try String(contentsOfFile: packageRoot + "/" + path, encoding: .utf8)
                out.append((path, text.split(separator: "\n", omittingEmptySubsequences: false)))
            }
        }
        #expect(out.count > 50)
        return out
    }

    /// What a second normaliser or a second arch table looks like.
    static let forbidden: [(what: String, pattern: String)] = [
        ("hex-formats id bytes", #"%02x"#),
        ("strips dashes from an id", #"filter \{ \$0 != "-"|replacingOccurrences\(of: "-""#),
        ("lowercases an id", #"(?i)(uuid|build_?id|\bid\b|\bhex\b).*\.lowercased\(\)"#),
        ("Mach-O CPU type constant", #"0x0[12]00_?00|16777223|16777228|CPU_(SUB)?TYPE_"#),
        ("ELF machine constant", #"\bEM_(386|ARM|X86_64|AARCH64|RISCV|PPC|PPC64|S390)\b"#),
        ("architecture name literal", #""(i386|x86|x86_64h?|X86-64|arm|ARM-64|arm64e?|arm64_32|armv[4-7][a-z]*|ppc(64)?|riscv64|s390x|aarch64)""#),
    ]

    @Test func noSecondNormaliserOrArchTableInSources() throws {
        var hits: [String] = []
        for (path, lines) in try Self.sources() where !Self.owners.contains(path) {
            for (number, line) in lines.enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? line
                for (what, pattern) in Self.forbidden where code.range(of: pattern, options: .regularExpression) != nil {
                    hits.append("\(path):\(number + 1): \(what): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(hits.isEmpty, "\(hits.joined(separator: "\n"))")
    }

    /// The patterns find the copies this issue removed (as they stood on main before it).
    @Test func thePatternsFindTheOldCopies() {
        let old = [
            #"let hex = trimmed.lowercased().filter { $0 != "-" && $0 != "{" && $0 != "}" }"#,
            #"let abi64: Int64 = 0x0100_0000"#,
            #"case 0x0100_000c: return subtype == 2 ? "arm64e" : "arm64""#,
            #"let id = uuid.lowercased().filter { $0 != "-" }"#,
            #"let id = buildID.lowercased().filter { $0 != "-" }"#,
            #"uuid = (0..<16).map { String(format: "%02x", r.bytes[at + 8 + $0]) }.joined()"#,
            #"case EM_AARCH64: return "arm64""#,
            #"case "x86": "i386""#,
            #"if code.hasPrefix("X86-64") { return "x86_64" }"#,
        ]
        for line in old {
            #expect(Self.forbidden.contains { line.range(of: $0.pattern, options: .regularExpression) != nil }, "\(line)")
        }
    }

    /// The call sites that had their own copy now name the types.
    @Test func formerCopiesGoThroughBuildIDAndArch() throws {
        let sources = Dictionary(uniqueKeysWithValues: try Self.sources().map { ($0.path, $0.lines.joined(separator: "\n")) })
        let required: [(String, [String])] = [
            ("Sources/ReportFormats/ReportText.swift", ["BuildID(raw, lengths: lengths)"]),
            ("Sources/ReportFormats/AppleCrashTextFormat.swift", ["BuildID.reported(", "Arch(canonicalName:", "code.canonical"]),
            ("Sources/ReportFormats/AppleIPSFormat.swift", ["BuildID.reported(", "Arch($0)"]),
            ("Sources/ReportFormats/KSCrashFormat.swift", ["BuildID.reported(", "Arch(machOCPUType:"]),
            ("Sources/ReportFormats/LagReportFormat.swift", ["BuildID.reported(", "Arch($0)"]),
            ("Sources/ReportFormats/AndroidTombstoneFormat.swift", ["Arch($0).canonical"]),
            ("Sources/ReportFormats/FileAddressImages.swift", ["BuildID.reported("]),
            ("Sources/ReportFormats/SwiftBacktraceJSONFormat.swift", ["BuildID.reported(", "Arch($0)"]),
            ("Sources/ReportFormats/SwiftBacktraceTextFormat.swift", ["BuildID.reported(", "Arch(String($0))"]),
            ("Sources/DebugInfo/MachO/MachOSlice.swift", ["Arch(machOCPUType:", "BuildID(bytes:"]),
            ("Sources/DebugInfo/MachO/MachOFile.swift", ["Arch(machOCPUType:", "slice(uuid: BuildID)", "isSame(as:"]),
            ("Sources/DebugInfo/ELF/ElfFile.swift", ["Arch(elfMachine:", "BuildID(bytes:"]),
            ("Sources/DebugInfo/MachO/MachOElfImage.swift", ["arch.elfMachine"]),
            ("Sources/SymbolStore/SymbolStoreDirectory.swift", ["BuildID(text, lengths: .anyByteCount)", "public var buildId: BuildID", "public var arch: Arch"]),
            ("Sources/ReportModel/PointerAuthentication.swift", ["arch: Arch?", "arch?.cpu"]),
            ("Sources/Symbolication/OpenDebugFiles.swift", ["file(buildID id: BuildID)"]),
            ("Sources/stackline/LookupCommand.swift", ["Arch($0)", "SymbolStoreDirectory.buildID("]),
            ("Sources/ReportModel/RawReport.swift", ["public var id: BuildID?", "public var arch: Arch?"]),
            ("Sources/ReportModel/SymbolicatedReport.swift", ["public var arch: Arch?"]),
        ]
        for (path, needles) in required {
            let text = try #require(sources[path], "\(path) is gone: update this list")
            for needle in needles { #expect(text.contains(needle), "\(path) no longer contains \(needle)") }
        }
        // No model keeps an architecture as a bare String.
        for (path, text) in sources where path.hasPrefix("Sources/ReportModel/") || path.hasPrefix("Sources/SymbolStore/") {
            #expect(text.range(of: #"var arch: String"#) == nil, "\(path)")
        }
    }
}
