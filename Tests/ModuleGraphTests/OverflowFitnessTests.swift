import Foundation
import TestSupport
import Testing

/// Every sum of numbers from a report, a payload or a stored result is checked (issue 28, F1 and
/// F2: an unchecked `reduce` and a `count + n` compared after adding took the server down). This
/// fails when a new unchecked one appears in the modules that parse, group or render reports.
///
/// A line passes when it uses `checkedSum`, `saturatingSum`, `saturatingAdding`,
/// `addingReportingOverflow`, `&+`, or carries a reason on it or on the line above:
/// `// overflow: <why it is bounded>`. The shapes looked for, all on integers:
/// - `reduce(0, …)` / `reduce(into: 0) …`, the sum that trapped in F1 and F2;
/// - `a += b.count` (or `.size`, `.depth`, …): a total accumulated from values;
/// - `a + b.count <= c`: adding before comparing with a limit, the KSCrash shape of F1;
/// - `Int(x / 7)`, `Int(d.rounded())`: an integer made of a Double (Charts.fmt, fuzz finding 5).
@Suite struct OverflowFitnessTests {
    static let scanned = [
        "Sources/ReportFormats", "Sources/ReportModel", "Sources/Grouping", "Sources/WebView", "Sources/ReportRendering",
        "Sources/Intake", "Sources/SDKProtocol", "Sources/Unwinding",
    ]

    /// Lines in files other modules' owners keep, each with why it is bounded, until they carry
    /// the mark themselves: path and the line's code, exactly.
    static let accepted: [(path: String, code: String, reason: String)] = [
        ("Sources/Intake/SDKBatchIntake.swift", "inflated += data.count", "bytes inflated into memory, each payload capped"),
    ]

    struct Finding: CustomStringConvertible, Equatable {
        var path: String
        var line: Int
        var code: String
        var description: String { "\(path):\(line): \(code)" }
    }

    /// Names of values that are counts, sizes, depths or offsets.
    static let valueName = #"(?:count|Count|size|Size|depth|Depth|offset|Offset|total|Total|samples|Samples|length|Length|costTime)\b"#
    static let shapes: [NSRegularExpression] = [
        #"\breduce\(\s*(?:into:\s*)?0(?![.\d])"#,
        #"(?<![&\w])\w[\w.]*\s*\+=\s*[\w.$]*"# + valueName,
        // `a + b <= limit`, with a value name on either side.
        #"[\w.$]*"# + valueName + #"\s*(?<!&)\+(?![=+])\s*[\w.$]+\s*(?:<=|<|>=|>)(?!=)"#,
        #"[\w.$\]\)]\s*(?<!&)\+(?![=+])\s*[\w.$]*"# + valueName + #"\s*(?:<=|<|>=|>)(?!=)"#,
        // `Int(x / 7)`, `Int(someDouble.rounded())`: a conversion from Double traps on NaN,
        // infinity and anything out of range (`Int.clamping` does not).
        #"\bU?Int(?:8|16|32|64)?\((?!truncatingIfNeeded|clamping|exactly|bitPattern)(?:\([^()]*\)|[^()])*(?:Double|rounded|costTime| / | \* |Float)"#,
    ].map { try! NSRegularExpression(pattern: $0) }

    /// The unchecked sums in one file's text. Comments and string literals are not code.
    static func findings(in text: String, path: String) -> [Finding] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var found: [Finding] = []
        for (i, line) in lines.enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("//") { continue }
            let previous = i > 0 ? lines[i - 1].trimmingCharacters(in: .whitespaces) : ""
            if line.contains("// overflow:") || previous.hasPrefix("// overflow:") { continue }
            let code = Self.code(line)
            let range = NSRange(code.startIndex..., in: code)
            guard shapes.contains(where: { $0.firstMatch(in: code, range: range) != nil }) else { continue }
            let codeText = code.trimmingCharacters(in: .whitespaces)
            if accepted.contains(where: { $0.path == path && $0.code == codeText }) { continue }
            found.append(Finding(path: path, line: i + 1, code: codeText))
        }
        return found
    }

    /// The line without its trailing comment and with string literals emptied.
    static func code(_ line: String) -> String {
        var out = ""
        var inString = false
        var previous: Character = " "
        var chars = line.makeIterator()
        while let c = chars.next() {
            if inString {
                if c == "\"" && previous != "\\" { inString = false; out.append(c) }
            } else if c == "\"" {
                inString = true
                out.append(c)
            } else if c == "/" && previous == "/" {
                out.removeLast()
                break
            } else {
                out.append(c)
            }
            previous = c
        }
        return out
    }

    @Test func noUncheckedSumOverReportValues() throws {
        var found: [Finding] = []
        var files = 0
        for top in Self.scanned {
            let root = packageRoot + "/" + top
            guard let walker = FileManager.default.enumerator(atPath: root) else { throw TestSupportError("cannot list \(root)") }
            for case let relative as String in walker where relative.hasSuffix(".swift") {
                files += 1
                let path = top + "/" + relative
                found += Self.findings(in: try String(contentsOfFile: root + "/" + relative, encoding: .utf8), path: path)
            }
        }
        #expect(files > 50, "the scan found only \(files) files: wrong root?")
        #expect(
            found.isEmpty,
            "unchecked sums (use checkedSum/saturatingSum/addingReportingOverflow, or mark the line `// overflow: <why bounded>`):\n\(found.map(\.description).joined(separator: "\n"))")
    }

    /// The scan catches the lines that trapped (as they were before issue 28), and passes their
    /// fixed and marked forms: without this the test above could pass by seeing nothing.
    @Test func theScanFindsTheShapesThatTrapped() {
        let trapped = [
            // MetricKitReport.report(for:), F1
            "let rootSamples = zip(stack.frames, counts).filter { $0.0.depth == 0 }.reduce(0) { $0 + $1.1 }",
            // FlameGraph.layout, F2
            "let total = nodes.filter { $0.parent == nil }.reduce(0) { $0 + $1.count }",
            // KSCrashFormat.profile, F1
            "guard lagSamples.count + repeats <= ReportLimits.maxLagSamples else {",
            "guard index + needle.count <= bytes.count else {",
            // Charts.trend
            "let total = counts.reduce(0, +)",
            "let sum = values.reduce(into: 0) { $0 += $1 }",
            "samples += node.count",
            // Charts.fmt and FlameGraph.svg
            "if rounded == rounded.rounded() { return String(Int(rounded)) }",
            "let fits = Int((rect.width - 6) / 7)",
        ]
        for line in trapped {
            #expect(Self.findings(in: line, path: "x.swift").count == 1, "not found: \(line)")
        }
        let fine = [
            "let total = counts.saturatingSum()",
            "let rootsNeeded = roots.reduce(0.0) { $0 + needed[$1] }",
            "let total = counts.reduce(0, +)  // overflow: at most 30 days of counts",
            "// overflow: compared with the limit just above\nsamples += node.count",
            "guard repeats <= ReportLimits.maxLagSamples - lagSamples.count else {",
            "position &+= count",
            "/// The sum, `reduce(0, +)`, trapped here",
            "warnings.append(\"base + imageOffset <= 2^64 fails: total += x.count\")",
            "depth += 1",
            "let fits = Int.clamping((rect.width - 6) / 7)",
            "guard let value = Int(exactly: double) else { return nil }",
        ]
        for text in fine {
            #expect(Self.findings(in: text, path: "x.swift").isEmpty, "flagged: \(text)")
        }
    }
}
