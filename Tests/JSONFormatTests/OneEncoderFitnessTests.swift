import Foundation
import JSONFormat
import TestSupport
import Testing

/// Issue 29's "one JSON-writing family": JSON is written by `JSONBytes` (hot paths) or by the one
/// configured encoder, `JSONStyle`; nowhere else in Sources/ or Workers/ configures a
/// `JSONEncoder` or writes through `JSONSerialization`.
@Suite struct OneEncoderFitnessTests {
    /// Where a writer may be made: the module that holds the one configured encoder.
    static let allowed = "Sources/JSONFormat/"
    /// What making or using another JSON writer looks like in Swift source.
    static let writers = ["JSONEncoder()", "JSONSerialization.data(", "JSONSerialization.writeJSONObject("]

    struct Finding: CustomStringConvertible, Equatable {
        var path: String
        var line: Int
        var text: String
        var description: String { "\(path):\(line): \(text)" }
    }

    /// The code lines of one file (comments skipped) that make a JSON writer.
    static func writersMade(in text: String, path: String) -> [Finding] {
        var found: [Finding] = []
        for (i, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.hasPrefix("//") else { continue }
            let code = trimmed.components(separatedBy: " //").first ?? trimmed
            if writers.contains(where: { code.contains($0) }) { found.append(Finding(path: path, line: i + 1, text: trimmed)) }
        }
        return found
    }

    @Test func noJSONWriterOutsideJSONFormat() throws {
        let files = try swiftSourceFiles(in: ["Sources", "Workers"])
        #expect(files.count > 200, "the scan found only \(files.count) files: wrong root?")
        #expect(files.contains { $0.path.hasPrefix(Self.allowed) }, "the scan did not see \(Self.allowed)")
        let found = files.filter { !$0.path.hasPrefix(Self.allowed) }.flatMap { Self.writersMade(in: $0.text, path: $0.path) }
        #expect(
            found.isEmpty,
            "JSON written outside the one family (use JSONStyle.document / .compact, or JSONBytes on a hot path):\n\(found.map(\.description).joined(separator: "\n"))"
        )
    }

    /// One `JSONValue`: before issue 29 the SDK and the alert rules each had their own enum.
    @Test func oneJSONValueEnum() throws {
        let declarations = try swiftSourceFiles(in: ["Sources", "Workers"]).flatMap { file in
            file.text.split(separator: "\n").filter {
                $0.contains("enum JSONValue") && !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//")
            }.map { _ in file.path }
        }
        #expect(declarations == ["Sources/JSONFormat/JSONValue.swift"], "JSONValue declared in \(declarations)")
    }

    /// The scan finds what it looks for, so the test above is not vacuous: the forms the
    /// tree held before issue 29 are each found, a comment naming them is not.
    @Test func theScanFindsEachForm() {
        let sample = """
            let e = JSONEncoder()
            return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            // A plain JSONEncoder() is what this comment talks about.
            let body = try Framing.bundle([try JSONEncoder().encode(request)])  // one line
            """
        #expect(Self.writersMade(in: sample, path: "x.swift").map(\.line) == [1, 2, 4])
    }

    /// The two halves of the family agree: `JSONBytes` escapes every string exactly as the
    /// configured encoder does (every ASCII byte, a slash, non-ASCII text), and writes numbers
    /// as it does.
    @Test func theHotPathWriterMatchesTheConfiguredEncoder() throws {
        var texts = (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        texts += ["a/b", "é ü ✓ 🧵", "\u{7f}\u{80}\u{2028}", "line\nbreak \"quoted\" \\ back"]
        for text in texts {
            var json = JSONBytes()
            json.string(text)
            #expect(json.bytes == Array(try JSONStyle.compact.encode(text)), "\(text.unicodeScalars.map(\.value))")
        }
        for number in [0, 1, -1, 0.5, 1e308, -2.5e-7, 123_456_789.25] {
            var json = JSONBytes()
            json.number(number)
            #expect(json.bytes == Array(try JSONStyle.compact.encode(number)), "\(number)")
        }
        for value in [0, 1, UInt64.max, 0x1f0] {
            var json = JSONBytes()
            json.hex(value)
            #expect(json.bytes == Array(try JSONStyle.compact.encode("0x" + String(value, radix: 16))))
        }
    }

    /// The documented style (docs/json.md), checked against Python's json module: sorted keys,
    /// slashes unescaped, RFC 3339 UTC times, absent optionals left out.
    @Test func theDocumentStyleIsDocsJSONStyle() throws {
        struct Sample: Encodable {
            var zeta = 1
            var alpha = "a/b"
            var when = Date(timeIntervalSince1970: 1_777_636_800)
            var missing: String? = nil
        }
        let text = try encodeJSON(Sample())
        let oracle = try python(
            "import json,sys; d=json.load(sys.stdin); print(json.dumps([list(d), d['alpha'], d['when'], 'missing' in d]))",
            input: text)
        #expect(oracle == #"[["alpha", "when", "zeta"], "a/b", "2026-05-01T12:00:00Z", false]"#)
        #expect(text.contains("\"a/b\""), "a slash is written as is")
        #expect(text.contains("\n"), "the document style is indented")
        #expect(!(String(decoding: try JSONStyle.compact.encode(Sample()), as: UTF8.self)).contains("\n"))
    }

    func python(_ program: String, input: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", program]
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
