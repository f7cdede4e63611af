import Foundation
import TestSupport
import Testing

/// Two rules about what the comments in Sources/ and Workers/ must say (issue 29):
///
/// - Every `@unchecked Sendable` says what makes it safe, because the compiler no longer checks:
///   a comment line starting `Sendable:` followed by the reason (`// Sendable: every field is
///   behind `lock``), either at the end of the line that declares it or in the comment block
///   right above the declaration (attribute lines between are allowed).
/// - No comment quotes a measured share (a number followed by `%`, such as "9% of the master's
///   CPU"): nothing checks such a number, so it goes stale. A comment keeps the reason and names
///   the benchmark that justifies a fast path (`scripts/bench-queue.sh`, a `make bench` part);
///   the figures go to docs/performance.md as dated entries.
@Suite struct SourceRulesTests {
    static let scanned = ["Sources", "Workers"]

    struct Finding: CustomStringConvertible, Equatable {
        var path: String
        var line: Int
        var text: String
        var description: String { "\(path):\(line): \(text)" }
    }

    /// A `Sendable:` reason with at least one word after it, in a `//` or `///` comment.
    static let sendableReason = try! NSRegularExpression(pattern: #"//+\s*Sendable:\s*\S"#)
    /// A number followed by a percent sign: a measured share.
    static let percentage = try! NSRegularExpression(pattern: #"\d\s?%"#)

    static func matches(_ regex: NSRegularExpression, _ text: String) -> Bool {
        regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    static func isComment(_ trimmed: String) -> Bool { trimmed.hasPrefix("//") }

    /// The `@unchecked Sendable` declarations of one file without a `Sendable:` reason.
    static func uncommentedUncheckedSendable(in text: String, path: String) -> [Finding] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var found: [Finding] = []
        for (i, line) in lines.enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !isComment(trimmed), line.contains("@unchecked Sendable") else { continue }
            if matches(sendableReason, line) { continue }
            // The comment block right above, skipping attribute lines (`@available(…)`).
            var j = i - 1
            var reasoned = false
            while j >= 0 {
                let above = lines[j].trimmingCharacters(in: .whitespaces)
                if isComment(above) {
                    if matches(sendableReason, above) { reasoned = true; break }
                } else if !above.hasPrefix("@") {
                    break
                }
                j -= 1
            }
            if !reasoned { found.append(Finding(path: path, line: i + 1, text: trimmed)) }
        }
        return found
    }

    /// The comment lines of one file that quote a percentage.
    static func quotedPercentages(in text: String, path: String) -> [Finding] {
        var found: [Finding] = []
        for (i, piece) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(piece)
            guard let start = Self.commentStart(line) else { continue }
            let comment = String(line[start...])
            if matches(percentage, comment) {
                found.append(Finding(path: path, line: i + 1, text: comment.trimmingCharacters(in: .whitespaces)))
            }
        }
        return found
    }

    /// Where a line's `//` comment starts, outside string literals; nil when it has none.
    static func commentStart(_ line: String) -> String.Index? {
        var inString = false
        var previous: Character = " "
        var index = line.startIndex
        while index < line.endIndex {
            let c = line[index]
            if inString {
                if c == "\"" && previous != "\\" { inString = false }
            } else if c == "\"" {
                inString = true
            } else if c == "/" && previous == "/" {
                return line.index(before: index)
            }
            previous = c
            index = line.index(after: index)
        }
        return nil
    }

    @Test func everyUncheckedSendableSaysWhatGuardsIt() throws {
        let files = try swiftSourceFiles(in: Self.scanned)
        #expect(files.count > 200, "the scan found only \(files.count) files: wrong root?")
        let found = files.flatMap { Self.uncommentedUncheckedSendable(in: $0.text, path: $0.path) }
        #expect(
            found.isEmpty,
            "@unchecked Sendable without a reason (add `// Sendable: <what guards it>` on the line or in the comment above):\n\(found.map(\.description).joined(separator: "\n"))"
        )
    }

    @Test func noCommentQuotesAPercentage() throws {
        let found = try swiftSourceFiles(in: Self.scanned).flatMap { Self.quotedPercentages(in: $0.text, path: $0.path) }
        #expect(
            found.isEmpty,
            "comments quoting a measured share (keep the reason, name the benchmark, move the figure to docs/performance.md):\n\(found.map(\.description).joined(separator: "\n"))"
        )
    }

    /// The scans find what they look for and pass the accepted forms: without this the tests
    /// above could pass by seeing nothing.
    @Test func theScansFindWhatTheyLookFor() {
        let bare = """
            /// A cache of names.
            final class NameCache: @unchecked Sendable {
            """
        #expect(Self.uncommentedUncheckedSendable(in: bare, path: "x.swift").count == 1)
        let empty = "final class A: @unchecked Sendable {  // Sendable:"
        #expect(Self.uncommentedUncheckedSendable(in: empty, path: "x.swift").count == 1)
        let separated = """
            // Sendable: `lock` guards `names`.

            final class NameCache: @unchecked Sendable {
            """
        #expect(Self.uncommentedUncheckedSendable(in: separated, path: "x.swift").count == 1)
        let reasoned = [
            """
            /// A cache of names.
            /// Sendable: `lock` guards `names`; nothing else is mutable.
            final class NameCache: @unchecked Sendable {
            """,
            """
            // Sendable: read only after init.
            @available(macOS 14, *)
            final class Table: @unchecked Sendable {
            """,
            "extension Handle: @unchecked Sendable {}  // Sendable: used by one thread at a time (the slot's)",
            "/// `@unchecked Sendable` types need a reason.",
        ]
        for text in reasoned {
            #expect(Self.uncommentedUncheckedSendable(in: text, path: "x.swift").isEmpty, "flagged: \(text)")
        }

        let quoted = [
            "    /// normalising was 43% of its CPU on 30-frame reports",
            "let x = 1  // 2.5 % of the master's samples",
        ]
        for text in quoted {
            #expect(Self.quotedPercentages(in: text, path: "x.swift").count == 1, "not found: \(text)")
        }
        let fine = [
            "    /// Cheaper than JSONEncoder on the hot path: see scripts/bench-queue.sh.",
            "let format = \"%d%%\"  // the format string, not a comment's figure",
            "let share = \"50%\"",
        ]
        for text in fine {
            #expect(Self.quotedPercentages(in: text, path: "x.swift").isEmpty, "flagged: \(text)")
        }
    }
}
