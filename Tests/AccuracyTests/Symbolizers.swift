import Foundation
import TestSupport

/// One frame of a symbolication answer (innermost first), in a tool-neutral form.
struct Frame: Equatable, Sendable {
    var function: String?  // nil when unknown ("??")
    var file: String?  // normalised; nil when unknown or line 0
    var line: Int  // 0 when unknown
    var column: Int  // 0 when unknown

    init(function: String?, file: String?, line: Int, column: Int) {
        let f = function?.trimmingCharacters(in: .whitespaces)
        self.function = (f == nil || f == "" || f == "??") ? nil : f
        // A location with line 0 carries no line information (llvm-symbolizer prints
        // "crtstuff.c:0:0" or "??:0:0" for the same thing): treat both as unknown.
        if let file, file != "??", !file.isEmpty, line > 0 {
            self.file = normalizePath(file)
            self.line = line
            self.column = column
        } else {
            self.file = nil
            self.line = 0
            self.column = 0
        }
    }

    var isUnknown: Bool { function == nil && file == nil }
    var text: String { "\(function ?? "??") @ \(file ?? "??"):\(line):\(column)" }
}

/// The answer for one address: its frames, innermost first. A lone unknown frame is
/// stored as no frames, so "??" from one tool and [] from another agree.
typealias Answer = [Frame]

func canonical(_ frames: [Frame]) -> Answer {
    frames.count == 1 && frames[0].isUnknown ? [] : frames
}

func describe(_ answer: Answer?) -> String {
    guard let answer else { return "(none)" }
    return answer.isEmpty ? "??" : answer.map(\.text).joined(separator: " | ")
}

/// Lexical path normalisation: collapses "//", "/./" and "dir/.." (no file system access).
func normalizePath(_ path: String) -> String {
    let absolute = path.hasPrefix("/")
    var parts: [Substring] = []
    for part in path.split(separator: "/", omittingEmptySubsequences: true) {
        if part == "." { continue }
        if part == "..", let last = parts.last, last != ".." {
            parts.removeLast()
            continue
        }
        if part == "..", absolute { continue }
        parts.append(part)
    }
    let joined = parts.joined(separator: "/")
    return absolute ? "/" + joined : (joined.isEmpty ? "." : joined)
}

/// Splits "FILE:LINE:COLUMN" or "FILE:LINE" (the file may itself contain colons).
func parseLocation(_ text: String) -> (file: String, line: Int, column: Int) {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    if parts.count >= 3, let line = Int(parts[parts.count - 2]), let column = Int(parts[parts.count - 1]) {
        return (parts[0..<(parts.count - 2)].joined(separator: ":"), line, column)
    }
    if parts.count >= 2, let line = Int(parts[parts.count - 1]) {
        return (parts[0..<(parts.count - 1)].joined(separator: ":"), line, 0)
    }
    return (text, 0, 0)
}

func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }

// MARK: - llvm-symbolizer (the main oracle)

enum LLVMSymbolizer {
    static func executable() throws -> String {
        try findTool(anyOf: ["llvm-symbolizer-14", "llvm-symbolizer"])
    }

    /// `llvm-symbolizer --obj=FILE -i -f [-C | --no-demangle] --print-address`, the
    /// addresses on stdin. One answer per address, in order.
    static func symbolize(_ file: String, _ addresses: [UInt64], demangle: Bool) throws -> [Answer] {
        let args = ["--obj=" + file, "-i", "-f", demangle ? "-C" : "--no-demangle", "--print-address"]
        let result = try runChecked(try executable(), args, stdin: addresses.map(hex).joined(separator: "\n") + "\n")
        var answers: [Answer] = []
        // Blocks separated by a blank line: the address, then (function, location) pairs.
        for block in result.stdout.components(separatedBy: "\n\n") {
            let lines = block.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
            guard let first = lines.first else { continue }
            guard first.hasPrefix("0x"), UInt64(first.dropFirst(2), radix: 16) == addresses[answers.count] else {
                throw TestSupportError("llvm-symbolizer output out of step at answer \(answers.count): \(first)")
            }
            var frames: [Frame] = []
            var i = 1
            while i + 1 < lines.count {
                let loc = parseLocation(lines[i + 1])
                frames.append(Frame(function: lines[i], file: loc.file, line: loc.line, column: loc.column))
                i += 2
            }
            answers.append(canonical(frames))
            if answers.count == addresses.count { break }
        }
        guard answers.count == addresses.count else {
            throw TestSupportError("llvm-symbolizer gave \(answers.count) answers for \(addresses.count) addresses")
        }
        return answers
    }
}

// MARK: - swift-demangle (llvm-symbolizer 14 does not demangle Swift names)

enum SwiftDemangle {
    /// Demangles every Swift-mangled function name in `answers` with the toolchain's
    /// swift-demangle. `sugar: false` (--no-sugar: "Swift.Optional<A>", not "A?") is the
    /// form the runtime's swift_demangle gives with its default options; the tool's own
    /// default adds the sugar.
    static func demangleSwiftNames(_ answers: [Answer], sugar: Bool = false) throws -> [Answer] {
        try replaceNames(in: answers, where: isSwiftMangled, using: "swift-demangle", sugar ? [] : ["--no-sugar"])
    }

    static func isSwiftMangled(_ name: String) -> Bool {
        name.hasPrefix("$s") || name.hasPrefix("_$s") || name.hasPrefix("$S") || name.hasPrefix("_T0")
    }
}

// MARK: - c++filt (the GNU demangler, the same libiberty code as __cxa_demangle)

enum GNUDemangle {
    /// Demangles every Itanium C++ name (`_Z…`) among the function names in `answers` with
    /// binutils' c++filt. llvm-symbolizer 14's own demangler spells things differently
    /// ("'lambda0'(auto const&)" for "{lambda(auto:1 const&)#2}", " (.cold)" for
    /// " [clone .cold]", and sometimes wrong parameter lists), so the oracle's raw names
    /// are also demangled the way the contract says Stackline does it (__cxa_demangle).
    static func demangleCxxNames(_ answers: [Answer]) throws -> [Answer] {
        try replaceNames(in: answers, where: { $0.hasPrefix("_Z") }, using: "c++filt", [])
    }
}

// MARK: - eu-addr2line (the second oracle)

enum EuAddr2line {
    /// `eu-addr2line -a -i -f [-C] -e FILE`, the addresses on stdin.
    static func symbolize(_ file: String, _ addresses: [UInt64], demangle: Bool) throws -> [Answer] {
        if addresses.isEmpty { return [] }
        let tool = try findTool("eu-addr2line")
        var args = ["-a", "-i", "-f", "-e", file]
        if demangle { args.append("-C") }
        // eu-addr2line exits 1 when some address has no answer; its output is still complete.
        let result = try runProcess(tool, args, input: addresses.map(hex).joined(separator: "\n") + "\n")
        guard result.status == 0 || result.status == 1 else { throw TestSupportError(result.summary) }
        var answers: [[Frame]] = []
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        var i = 0
        while i < lines.count {
            let line = lines[i]
            if line.hasPrefix("0x"), UInt64(line.dropFirst(2), radix: 16) != nil, !line.contains(" ") {
                answers.append([])
                i += 1
                continue
            }
            guard !answers.isEmpty, i + 1 < lines.count else {
                throw TestSupportError("eu-addr2line output not understood at line \(i): \(line)")
            }
            // "callee inlined at FILE:L:C in caller" names the inlined function first.
            var function = line
            if let r = function.range(of: " inlined at ") { function = String(function[..<r.lowerBound]) }
            let loc = parseLocation(lines[i + 1])
            answers[answers.count - 1].append(Frame(function: function, file: loc.file, line: loc.line, column: loc.column))
            i += 2
        }
        guard answers.count == addresses.count else {
            throw TestSupportError("eu-addr2line gave \(answers.count) answers for \(addresses.count) addresses")
        }
        return answers.map(canonical)
    }
}

// MARK: - Stackline

struct StacklineAnswers {
    var demangled: [Answer]
    var raw: [Answer]  // the same frames with `symbol` in place of `function`
}

enum StacklineLookup {
    /// `stackline lookup --symbols STORE --build-id ID --json`, the addresses on stdin.
    static func lookup(store: String, buildID: String, _ addresses: [UInt64], loadAddress: UInt64? = nil) throws -> StacklineAnswers {
        var args = ["lookup", "--symbols", store, "--build-id", buildID, "--json"]
        if let loadAddress { args += ["--load-address", hex(loadAddress)] }
        let result = try runStackline(args, stdin: addresses.map(hex).joined(separator: "\n") + "\n")
        guard result.succeeded else { throw TestSupportError("stackline lookup failed: \(result.summary)") }
        let parsed = try parseJSON(result.stdout)
        guard parsed.demangled.count == addresses.count else {
            throw TestSupportError("stackline lookup gave \(parsed.demangled.count) answers for \(addresses.count) addresses")
        }
        return parsed
    }

    static func parseJSON(_ text: String) throws -> StacklineAnswers {
        guard let top = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] else {
            throw TestSupportError("stackline lookup --json did not print a JSON array: \(text.prefix(300))")
        }
        var demangled: [Answer] = [], raw: [Answer] = []
        for entry in top {
            let frames = entry["frames"] as? [[String: Any]] ?? []
            func int(_ v: Any?) -> Int {
                if let n = v as? Int { return n }
                if let s = v as? String { return Int(s) ?? 0 }
                return 0
            }
            demangled.append(canonical(frames.map {
                Frame(function: $0["function"] as? String, file: $0["file"] as? String, line: int($0["line"]), column: int($0["column"]))
            }))
            raw.append(canonical(frames.map {
                Frame(function: $0["symbol"] as? String, file: $0["file"] as? String, line: int($0["line"]), column: int($0["column"]))
            }))
        }
        return StacklineAnswers(demangled: demangled, raw: raw)
    }
}

/// Replaces the function names that `select` picks with what `tool` (reading one name per line)
/// turns them into; the other names stay.
func replaceNames(in answers: [Answer], where select: (String) -> Bool, using tool: String, _ arguments: [String]) throws -> [Answer] {
    let names = Set(answers.flatMap { $0.compactMap(\.function) }.filter(select)).sorted()
    guard !names.isEmpty else { return answers }
    let result = try runChecked(try findTool(tool), arguments, stdin: names.joined(separator: "\n") + "\n")
    let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    guard lines.count >= names.count else {
        throw TestSupportError("\(tool) gave \(lines.count) lines for \(names.count) names")
    }
    let map = Dictionary(uniqueKeysWithValues: zip(names, lines.prefix(names.count)))
    return answers.map { frames in
        frames.map { f in
            var g = f
            if let name = f.function, let d = map[name] { g.function = d }
            return g
        }
    }
}
