import Foundation
import ReportModel

/// The message the Swift runtime prints when a program traps on purpose
/// (`Swift/ContiguousArrayBuffer.swift:692: Fatal error: Index out of range`), as the Swift
/// backtracer's stderr and KSCrash's `crash_info_message` carry it.
///
/// The `file:line: ` in front names the standard library's source, which moves between
/// toolchains; the message proper starts at the runtime's own word for the trap. Keeping only
/// that part lets the same trap group together across Swift versions.
enum SwiftRuntimeMessage {
    /// The words `_assertionFailure` prints before the message.
    static let markers = ["Fatal error: ", "Precondition failed: ", "Assertion failed: ", "Fatal error", "Precondition failed", "Assertion failed"]

    /// `Fatal error: Index out of range` from `Swift/ContiguousArrayBuffer.swift:692: Fatal error: Index out of range`;
    /// any other text unchanged (trailing blanks and line breaks trimmed).
    static func withoutLocation(_ text: String) -> String {
        let line = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return message(in: line) ?? line
    }

    /// The runtime message in one line of output, if the line is one: it begins with a marker,
    /// or a marker follows a `file:line: ` location.
    static func message(in line: String) -> String? {
        for marker in markers {
            if line.hasPrefix(marker) { return line }
            guard let range = line.range(of: ": " + marker) else { continue }
            let location = line[..<range.lowerBound]
            // "…/File.swift:692": a path, a colon, digits.
            guard let colon = location.lastIndex(of: ":"), location.index(after: colon) < location.endIndex,
                location[location.index(after: colon)...].allSatisfy(\.isASCIIDigit), !location.contains(" ")
            else { continue }
            return String(line[line.index(range.lowerBound, offsetBy: 2)...])
        }
        return nil
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
