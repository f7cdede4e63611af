import Foundation

/// Whether one piece of report text occurs in another, compared as UTF-8 bytes.
///
/// Foundation's `contains(_:)`, `range(of:)` and `replacingOccurrences(of:with:)` must never be
/// given report text to look for: with a NUL after other text in what they look for they trap
/// (`"\u{FFFD}".contains("\u{FFFD}\u{0}")`: "String index is out of bounds") or answer wrongly
/// (`"x".contains("x\u{0}")` is true). The apple-ips-legacy fuzz target found the trap, through
/// two `Application Specific Information:` lines. Written by hand because the standard library
/// has no byte search for strings and glibc's `memmem` is not visible to Swift; format detection
/// searches every uploaded report with it too (`JSONText.contains`).
public enum UTF8Search {
    /// True when `part`'s bytes occur in `text`'s; an empty `part` occurs in any text.
    public static func contains(_ text: String, _ part: String) -> Bool {
        var text = text, part = part
        return text.withUTF8 { haystack in
            part.withUTF8 { needle in contains(UnsafeRawBufferPointer(haystack), UnsafeRawBufferPointer(needle)) }
        }
    }

    /// True when `pattern`'s bytes occur in `haystack`'s; an empty `pattern` occurs anywhere.
    public static func contains(_ haystack: UnsafeRawBufferPointer, _ pattern: UnsafeRawBufferPointer) -> Bool {
        guard let key = pattern.baseAddress, !pattern.isEmpty else { return true }
        guard let base = haystack.baseAddress, haystack.count >= pattern.count else { return false }
        // memchr looks for one byte of the pattern, the rarest in crash reports: every stop is a
        // call, and anchoring on a quote stopped it at nearly every token, on `c` of `"crash"`
        // or `_` of `"binary_images"` at every tenth or so byte of an `.ips` body (both showed in
        // the ingest endpoint's profile, scripts/bench-serve.sh).
        var anchor = 0
        for i in 0..<pattern.count where rarity[Int(pattern[i])] < rarity[Int(pattern[anchor])] { anchor = i }
        let last = haystack.count - pattern.count
        var start = 0
        while start <= last {
            guard let hit = memchr(base + start + anchor, Int32(pattern[anchor]), last - start + 1) else { return false }
            let candidate = UnsafeRawPointer(hit) - anchor
            // The ends first, inline: most anchor hits are some other word, and a memcmp call
            // for each showed in the ingest endpoint's profile on `.ips` uploads (scripts/bench-serve.sh).
            if candidate.load(as: UInt8.self) == pattern[0],
                candidate.load(fromByteOffset: pattern.count - 1, as: UInt8.self) == pattern[pattern.count - 1],
                memcmp(candidate, key, pattern.count) == 0
            {
                return true
            }
            start = candidate - base + 1
        }
        return false
    }

    /// Each byte's rank by how often it occurs in JSON crash reports, rarest first (counted over
    /// the `.ips`, KSCrash and Swift runtime reports under Tests/Fixtures); bytes not listed
    /// rank as rarest of all.
    private static let rarity: [UInt8] = {
        let common = #"!#?^`|';~$YQ%@JZ&H*+q<W>)(=V\G[]ORNMUTXxIjKzLw{}EkBhPfvFgSA.CD5-7984yb6123c0_ulnpd/,:mstoirae""#
        var rank = [UInt8](repeating: 0, count: 256)
        for (i, byte) in common.utf8.enumerated() { rank[Int(byte)] = UInt8(i + 1) }
        // Whitespace is everywhere in pretty-printed reports.
        for byte in [0x20, 0x0a, 0x09, 0x0d] as [UInt8] { rank[Int(byte)] = 255 }
        return rank
    }()
}
