import Foundation

/// One binary built by Tests/Fixtures/build-elf-fixtures.sh (a line of its fixtures.tsv).
public struct ElfFixture: Sendable, CustomStringConvertible {
    public enum Role: String, Sendable { case accuracy, crash, noBuildID = "no-build-id" }
    public var name: String
    public var role: Role
    public var language: String  // c, c++, swift
    public var compiler: String
    public var unstripped: String
    public var stripped: String?
    public var debugFile: String?
    public var buildID: String?
    public var summary: String
    public var description: String { name }
}

public struct ElfFixtureSet: Sendable {
    public var directory: String
    public var fixtures: [ElfFixture]

    public func named(_ name: String) throws -> ElfFixture {
        guard let f = fixtures.first(where: { $0.name == name }) else {
            throw TestSupportError("fixture \(name) is not in \(directory)/fixtures.tsv")
        }
        return f
    }
    public var accuracy: [ElfFixture] { fixtures.filter { $0.role == .accuracy } }
}

/// Builds the ELF fixtures into `directory` (a new temporary one if nil) by running
/// Tests/Fixtures/build-elf-fixtures.sh, and reads back its manifest. A missing compiler
/// or tool is an error with the script's message, never a silent skip.
public func buildElfFixtures(into directory: String? = nil) throws -> ElfFixtureSet {
    let out = try directory ?? makeTemporaryDirectory(prefix: "stackline-fixtures")
    let script = packageRoot + "/Tests/Fixtures/build-elf-fixtures.sh"
    // The Swift toolchain directory holds clang and swiftc; make sure the script sees it.
    let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") + ":/opt/swift/usr/bin"
    let result = try runProcess("/bin/bash", [script, out], environment: ["PATH": path])
    guard result.succeeded else {
        throw TestSupportError("building the ELF fixtures failed: \(result.summary)")
    }
    let manifest = try String(contentsOfFile: out + "/fixtures.tsv", encoding: .utf8)
    var fixtures: [ElfFixture] = []
    for line in manifest.split(separator: "\n") {
        let c = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        guard c.count == 9, let role = ElfFixture.Role(rawValue: c[1]) else {
            throw TestSupportError("bad fixtures.tsv line: \(line)")
        }
        func opt(_ s: String) -> String? { s == "-" ? nil : s }
        fixtures.append(ElfFixture(
            name: c[0], role: role, language: c[2], compiler: c[3], unstripped: c[4],
            stripped: opt(c[5]), debugFile: opt(c[6]), buildID: opt(c[7]), summary: c[8]))
    }
    return ElfFixtureSet(directory: out, fixtures: fixtures)
}

nonisolated(unsafe) private var sharedFixtureDirectory: String?

/// The fixtures, built once per test process and shared by every test that needs them.
/// Removed when the process exits, unless STACKLINE_KEEP_FIXTURES=1 (then the path is printed).
public let sharedElfFixtures: Result<ElfFixtureSet, TestSupportError> = {
    do {
        let set = try buildElfFixtures()
        if ProcessInfo.processInfo.environment["STACKLINE_KEEP_FIXTURES"] == "1" {
            print("[fixtures] kept in \(set.directory)")
        } else {
            sharedFixtureDirectory = set.directory
            atexit {
                if let dir = sharedFixtureDirectory { try? FileManager.default.removeItem(atPath: dir) }
            }
        }
        return .success(set)
    } catch let e as TestSupportError {
        return .failure(e)
    } catch { return .failure(TestSupportError("\(error)")) }
}()

/// Instruction addresses in section `section` (default .text) of `file`, from the
/// disassembly of an independent tool (binutils objdump, else llvm-objdump-14). With `arch`
/// (a Mach-O slice: arm64, x86_64; section `__text`), llvm-objdump-14 reads the file.
public func instructionAddresses(in file: String, section: String = ".text", arch: String? = nil) throws -> [UInt64] {
    let result: ProcessOutput
    if let arch {
        let objdump = try findTool(anyOf: ["llvm-objdump-14", "llvm-objdump"])
        result = try runChecked(objdump, ["-d", "--no-show-raw-insn", "--arch=\(arch)", "--section=\(section)", file])
    } else {
        let objdump = try findTool(anyOf: ["objdump", "llvm-objdump-14", "llvm-objdump"])
        result = try runChecked(objdump, ["-d", "--no-show-raw-insn", "-j", section, file])
    }
    var addresses: [UInt64] = []
    // Instruction lines look like "    1234:\tmov ..." (for fat Mach-O, "100000690:\tmovq ...").
    for line in result.stdout.split(separator: "\n", omittingEmptySubsequences: true) {
        guard line.first == " " || (arch != nil && line.first?.isHexDigit == true) else { continue }
        let trimmed = line.drop(while: { $0 == " " })
        guard let colon = trimmed.firstIndex(of: ":") else { continue }
        let hex = trimmed[..<colon]
        guard !hex.isEmpty, hex.allSatisfy(\.isHexDigit), let value = UInt64(hex, radix: 16) else { continue }
        let rest = trimmed[trimmed.index(after: colon)...]
        // Skip "(bad)" and padding-only lines? Keep every decoded instruction.
        if rest.trimmingCharacters(in: .whitespaces).isEmpty { continue }
        addresses.append(value)
    }
    if addresses.isEmpty { throw TestSupportError("no instructions found in \(section) of \(file)") }
    return addresses
}

/// The committed Mach-O fixtures (Tests/Fixtures/build-macho-fixtures.sh builds them).
public enum MachOFixtures {
    public static let directory = packageRoot + "/Tests/Fixtures/macho"
    /// Fat executable (arm64 + x86_64): symbol table, no DWARF.
    public static let executable = directory + "/Sample"
    /// Fat dSYM bundle of `executable`, and the DWARF file inside it.
    public static let dSYM = directory + "/Sample.dSYM"
    public static let dSYMDWARF = dSYM + "/Contents/Resources/DWARF/Sample"
    /// Thin arm64 dSYM bundle of a dylib, and its DWARF file.
    public static let dylibDSYM = directory + "/libgeometry.dylib.dSYM"
    public static let dylibDWARF = dylibDSYM + "/Contents/Resources/DWARF/libgeometry.dylib"

    /// UUID per arch (lowercase hex, no dashes), read by llvm-dwarfdump (an independent oracle).
    public static func uuids(_ file: String) throws -> [String: String] {
        let out = try runChecked(try findTool(anyOf: ["llvm-dwarfdump-14", "llvm-dwarfdump"]), ["--uuid", file])
        var result: [String: String] = [:]
        // "UUID: 4C4C446A-5555-3144-A1E0-F6DE5874C64D (arm64) path"
        for line in out.stdout.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count >= 3, words[0] == "UUID:" else { continue }
            let arch = words[2].trimmingCharacters(in: CharacterSet(charactersIn: "()"))
            result[arch] = words[1].lowercased().replacingOccurrences(of: "-", with: "")
        }
        return result
    }

    /// `__TEXT.vmaddr` of one slice, read by llvm-objdump (an independent oracle).
    public static func textVMAddress(_ file: String, arch: String) throws -> UInt64 {
        let out = try runChecked(try findTool(anyOf: ["llvm-objdump-14", "llvm-objdump"]), ["--macho", "--private-headers", "--arch=\(arch)", file])
        let lines = out.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let segment = lines.firstIndex(of: "segname __TEXT"), segment + 1 < lines.count,
            lines[segment + 1].hasPrefix("vmaddr 0x"), let value = UInt64(lines[segment + 1].dropFirst(9), radix: 16)
        else { throw TestSupportError("llvm-objdump shows no __TEXT vmaddr for \(arch) in \(file)") }
        return value
    }
}
