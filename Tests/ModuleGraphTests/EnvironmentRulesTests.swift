import Foundation
import TestSupport
import Testing

/// The environment is read once, at start, and never written (issue 29):
///
/// - No `setenv`, `unsetenv`, `putenv` or `clearenv` anywhere in Sources/, Workers/ or Fuzz/: they
///   race with every other thread's `getenv` (glibc's environment is not thread-safe), and a
///   value set at run time reached child processes only by accident.
/// - `ProcessInfo.processInfo.environment` and `getenv` only in `StacklineEnvironment.swift`
///   and the executables' entry points (the files with `@main`): library modules take
///   parameters, so what configures them is visible at the call and in one documented type.
@Suite struct EnvironmentRulesTests {
    static let scanned = ["Sources", "Workers", "Fuzz"]
    /// Where the environment may be read besides the `@main` files.
    static let reader = "Sources/ServiceRuntime/StacklineEnvironment.swift"

    static let writes = ["setenv(", "unsetenv(", "putenv(", "clearenv("]
    static let reads = ["ProcessInfo.processInfo.environment", "getenv("]

    /// The scanned root: the package, or `STACKLINE_SCAN_ROOT` (an old tree extracted with
    /// `git archive`, to see the rules fail on the code before them).
    static var root: String {
        if let other = ProcessInfo.processInfo.environment["STACKLINE_SCAN_ROOT"], !other.isEmpty { return other }
        return packageRoot
    }

    static func sourceFiles() throws -> [(path: String, text: String)] { try swiftSourceFiles(in: scanned, root: root) }

    struct Finding: CustomStringConvertible {
        var path: String
        var line: Int
        var text: String
        var description: String { "\(path):\(line): \(text)" }
    }

    /// The code of each line, numbered from 1: a `//` comment (at the start of the line or after
    /// a blank, so `https://` in a string stays) is cut off.
    static func codeLines(_ text: String) -> [(number: Int, code: String)] {
        text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().map { i, line in
            var code = Substring(line)
            var searched = code
            while let range = searched.range(of: "//") {
                if range.lowerBound == code.startIndex || code[code.index(before: range.lowerBound)].isWhitespace {
                    code = code[..<range.lowerBound]
                    break
                }
                searched = searched[range.upperBound...]
            }
            return (i + 1, String(code))
        }
    }

    /// Calls that write the environment.
    static func environmentWrites(in text: String, path: String) -> [Finding] {
        codeLines(text).compactMap { n, code in
            writes.contains { call in Self.calls(call, in: code) }
                ? Finding(path: path, line: n, text: code.trimmingCharacters(in: .whitespaces)) : nil
        }
    }

    /// Reads of the environment in a file that may not read it.
    static func environmentReads(in text: String, path: String) -> [Finding] {
        if path.hasSuffix(reader) || codeLines(text).contains(where: { $0.code.contains("@main") }) { return [] }
        return codeLines(text).compactMap { n, code in
            reads.contains { call in Self.calls(call, in: code) }
                ? Finding(path: path, line: n, text: code.trimmingCharacters(in: .whitespaces)) : nil
        }
    }

    /// `name` in `code` not as the tail of a longer identifier (`unsetenv(` is not `setenv(`).
    static func calls(_ name: String, in code: String) -> Bool {
        var searched = code[...]
        while let range = searched.range(of: name) {
            let before = range.lowerBound == code.startIndex ? nil : code[code.index(before: range.lowerBound)]
            if let before, before.isLetter || before.isNumber || before == "_" {
                searched = code[range.upperBound...]
                continue
            }
            return true
        }
        return false
    }

    @Test func nothingWritesTheEnvironment() throws {
        let files = try Self.sourceFiles()
        #expect(files.count > 200, "the scan found only \(files.count) files: wrong root?")
        let found = files.flatMap { Self.environmentWrites(in: $0.text, path: $0.path) }
        #expect(
            found.isEmpty,
            "the environment is written at run time (pass the value down instead, or give a child process its own):\n\(found.map(\.description).joined(separator: "\n"))"
        )
    }

    @Test func onlyTheEntryPointsReadTheEnvironment() throws {
        let files = try Self.sourceFiles()
        #expect(files.contains { $0.path == Self.reader }, "no \(Self.reader)")
        let found = files.flatMap { Self.environmentReads(in: $0.text, path: $0.path) }
        #expect(
            found.isEmpty,
            "the environment is read outside StacklineEnvironment and the entry points (add a field to StacklineEnvironment and pass its value):\n\(found.map(\.description).joined(separator: "\n"))"
        )
    }

    /// The scans see what they look for and pass what is allowed: without this the tests above
    /// could pass by seeing nothing.
    @Test func theScansFindWhatTheyLookFor() {
        for text in ["setenv(\"TMPDIR\", dir, 1)", "    unsetenv(key)", "_ = putenv(entry)", "clearenv()"] {
            #expect(Self.environmentWrites(in: text, path: "Sources/A/x.swift").count == 1, "not found: \(text)")
        }
        for text in ["// setenv(\"X\", \"1\", 1) would race", "let name = \"STACKLINE_DB\"", "mySetenv(x)"] {
            #expect(Self.environmentWrites(in: text, path: "Sources/A/x.swift").isEmpty, "flagged: \(text)")
        }
        let reads = [
            "static let x = ProcessInfo.processInfo.environment[\"STACKLINE_X\"]",
            "func f(_ e: [String: String] = ProcessInfo.processInfo.environment) {}",
            "let home = getenv(\"HOME\")",
        ]
        for text in reads {
            #expect(Self.environmentReads(in: text, path: "Sources/A/x.swift").count == 1, "not found: \(text)")
            #expect(Self.environmentReads(in: text, path: Self.reader).isEmpty, "flagged in the reader: \(text)")
            #expect(Self.environmentReads(in: "@main\nstruct Main {}\n" + text, path: "Sources/m/Main.swift").isEmpty)
        }
        #expect(Self.environmentReads(in: "/// ProcessInfo.processInfo.environment is read once", path: "Sources/A/x.swift").isEmpty)
    }
}
