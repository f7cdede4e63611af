import Foundation

/// Whether one piece of report text occurs in another, compared as UTF-8 bytes.
///
/// Foundation's `contains(_:)`, `range(of:)` and `replacingOccurrences(of:with:)` must never be
/// given report text to look for: with a NUL after other text in what they look for they trap
/// (`"\u{FFFD}".contains("\u{FFFD}\u{0}")`: "String index is out of bounds") or answer wrongly
/// (`"x".contains("x\u{0}")` is true). The apple-ips-legacy fuzz target found the trap, through
/// two `Application Specific Information:` lines. Written by hand because the standard library
/// has no byte search for strings and glibc's `memmem` is not visible to Swift.
public enum UTF8Search {
    /// True when `part`'s bytes occur in `text`'s; an empty `part` occurs in any text.
    public static func contains(_ text: String, _ part: String) -> Bool {
        var text = text, part = part
        return text.withUTF8 { haystack in
            part.withUTF8 { needle in
                guard let first = needle.first else { return true }
                guard haystack.count >= needle.count, let base = haystack.baseAddress, let key = needle.baseAddress else {
                    return false
                }
                let last = haystack.count - needle.count
                var start = 0
                // memchr for the first byte, then memcmp: linear in practice, and no String index.
                while start <= last, let hit = memchr(base + start, Int32(first), last - start + 1) {
                    let offset = UnsafeRawPointer(hit) - UnsafeRawPointer(base)
                    if memcmp(base + offset, key, needle.count) == 0 { return true }
                    start = offset + 1
                }
                return false
            }
        }
    }
}
