/// Text edits the fast-path tests make to real JSON reports (`IPSFastPathTests`,
/// `SwiftBacktraceFastPathTests`).

/// `text` with the first occurrence of `target` replaced.
func replaceFirst(_ text: String, _ target: String, _ replacement: String) -> String {
    guard let range = text.range(of: target) else { return text }
    return text.replacingCharacters(in: range, with: replacement)
}

/// `text` from `start` on without insignificant whitespace (strings copied as written); what
/// comes before `start` (an `.ips` header line, stderr before a runtime report) is kept as it is.
func minifyJSON(_ text: String, from start: String.Index) -> String {
    var out = String(text[..<start])
    var inString = false, escaped = false
    for character in text[start...] {
        if inString {
            out.append(character)
            if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
        } else if character == "\"" {
            inString = true
            out.append(character)
        } else if !character.isWhitespace {
            out.append(character)
        }
    }
    return out
}
