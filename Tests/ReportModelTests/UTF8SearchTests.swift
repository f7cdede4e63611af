import Foundation
import ReportModel
import TestSupport
import Testing

/// `UTF8Search.contains`, used wherever one piece of report text is looked for in another,
/// against Python's `bytes` containment over the same UTF-8 (the independent oracle).
@Suite struct UTF8SearchTests {
    /// Where Foundation traps or answers wrongly (NUL after text in the needle), then random
    /// strings over a small alphabet with NULs, multi-byte scalars and combining marks, so that
    /// hits, near misses and overlapping prefixes are all common.
    @Test func answersAsPythonBytesContainment() throws {
        var pairs: [(String, String)] = [
            ("\u{FFFD}", "\u{FFFD}\u{0}"), ("x", "x\u{0}"), ("a\u{0}b", "\u{0}b"), ("", ""), ("abc", ""),
            ("", "a"), ("añb", "ñ"), ("añb", "n"), ("e\u{301}", "e"), ("é", "e\u{301}"), ("aaab", "aab"),
        ]
        var rng = SeededGenerator(seed: 15)
        let alphabet: [String] = ["a", "b", "\u{0}", "ñ", "\u{FFFD}", "\u{301}", "😀", " "]
        func random(_ length: Int) -> String {
            String((0..<length).map { _ in alphabet.randomElement(using: &rng)! }.joined())
        }
        for _ in 0..<300 {
            let text = random(Int.random(in: 0...12, using: &rng))
            // Half the needles are cut from the text itself, so that most of those are hits.
            let needle: String
            if Bool.random(using: &rng), !text.isEmpty {
                let scalars = Array(text.unicodeScalars)
                let start = Int.random(in: 0..<scalars.count, using: &rng)
                let end = Int.random(in: start...scalars.count, using: &rng)
                var cut = String.UnicodeScalarView()
                cut.append(contentsOf: scalars[start..<end])
                needle = String(cut)
            } else {
                needle = random(Int.random(in: 0...4, using: &rng))
            }
            pairs.append((text, needle))
        }
        let lines = pairs.map { Data($0.0.utf8).base64EncodedString() + " " + Data($0.1.utf8).base64EncodedString() }
        let dir = try TempDirectory("utf8search")
        defer { dir.remove() }
        let input = dir.file("pairs")
        try (lines.joined(separator: "\n") + "\n").write(toFile: input, atomically: true, encoding: .utf8)
        let script = """
            import base64, sys
            for line in open(sys.argv[1]):
                text, part = (base64.b64decode(f) for f in (line.split(" ") + [""])[:2])
                print(1 if part in text else 0)
            """
        let answers = try runChecked("/usr/bin/python3", ["-c", script, input]).stdout.split(separator: "\n")
        #expect(answers.count == pairs.count)
        var hits = 0
        for ((text, part), answer) in zip(pairs, answers) {
            let expected = answer == "1"
            if expected { hits += 1 }
            #expect(UTF8Search.contains(text, part) == expected, "\(text.debugDescription) contains \(part.debugDescription)")
        }
        #expect(hits > 50 && hits < pairs.count - 50, "\(hits) hits of \(pairs.count): the pairs should mix hits and misses")
    }

    /// The exception line every view prints: each fact once, now without Foundation's search.
    @Test func anExceptionWithANulInItsSignalIsSummarised() {
        let e = ExceptionInfo(type: "\u{FFFD}", signal: "\u{FFFD}\u{0}")
        #expect(e.summary == "\u{FFFD}\u{0}")
        #expect(ExceptionInfo(type: "EXC_CRASH", signal: "SIGABRT\u{0}x").summary == "EXC_CRASH / SIGABRT\u{0}x")
    }
}
