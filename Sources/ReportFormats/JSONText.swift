import Foundation
import ReportModel

/// JSON helpers shared by JSON-based formats: sniffing and syntax errors with line and column.
enum JSONText {
    /// First non-whitespace byte is `{` or `[`.
    static func looksLikeJSON(_ data: Data) -> Bool {
        for byte in data.prefix(4096) {
            switch byte {
            case 0x20, 0x09, 0x0a, 0x0d: continue
            case UInt8(ascii: "{"), UInt8(ascii: "["): return true
            default: return false
            }
        }
        return false
    }

    /// The first line that is not blank, and the index where the rest begins: the header of
    /// formats whose first line is a document of its own (`.ips`). Blank lines before it are
    /// skipped, as a JSON reader would skip them. Nil when there is no such line or no newline after it.
    static func headerLine(_ data: Data) -> (header: Range<Data.Index>, rest: Data.Index)? {
        // Over the raw buffer with memchr: `Data`'s generic index search was 2% of the ingest
        // endpoint's CPU (every `.ips` upload asks this several times).
        let found: (start: Int, newline: Int)? = data.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return nil }
            var start = 0
            while start < bytes.count, TextLine.isWhitespace(bytes[start]) { start += 1 }
            guard start < bytes.count, let newline = memchr(base + start, 0x0a, bytes.count - start) else { return nil }
            return (start, UnsafeRawPointer(newline) - base)
        }
        guard let found else { return nil }
        let start = data.startIndex + found.start, newline = data.startIndex + found.newline
        return (start..<newline, newline + 1)
    }

    /// True when `needle` occurs in the first `window` bytes.
    static func head(_ data: Data, contains needle: String, window: Int = 65536) -> Bool {
        contains(data.prefix(window), needle)
    }

    /// True when `needle` occurs anywhere in `bytes`. `memchr` for the first byte, then
    /// `memcmp`, over the raw buffer (glibc's `memmem` is not visible to Swift): detection asks
    /// this of every report several times, and `Data.range(of:)`'s generic search was 6% of the
    /// ingest endpoint's CPU (scripts/bench-serve.sh under perf).
    static func contains(_ bytes: Data, _ needle: String) -> Bool {
        var needle = needle
        return needle.withUTF8 { (pattern: UnsafeBufferPointer<UInt8>) -> Bool in
            bytes.withUnsafeBytes { (haystack: UnsafeRawBufferPointer) -> Bool in
                find(UnsafeRawBufferPointer(pattern), in: haystack)
            }
        }
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

    private static func find(_ pattern: UnsafeRawBufferPointer, in haystack: UnsafeRawBufferPointer) -> Bool {
        guard let key = pattern.baseAddress, !pattern.isEmpty else { return true }
        guard let base = haystack.baseAddress, haystack.count >= pattern.count else { return false }
        // memchr looks for one byte of the pattern, the rarest in crash reports: every stop is a
        // call, and anchoring on a quote stopped it at nearly every token (4% of the ingest
        // endpoint's CPU), on `c` of `"crash"` or `_` of `"binary_images"` at every tenth or so
        // byte of an `.ips` body (memchr alone was then 2.2%).
        var anchor = 0
        for i in 0..<pattern.count where rarity[Int(pattern[i])] < rarity[Int(pattern[anchor])] { anchor = i }
        let last = haystack.count - pattern.count
        var start = 0
        while start <= last {
            guard let hit = memchr(base + start + anchor, Int32(pattern[anchor]), last - start + 1) else { return false }
            let candidate = UnsafeRawPointer(hit) - anchor
            // The ends first, inline: most anchor hits are some other word, and a memcmp call
            // for each was 1.9% of the ingest endpoint's CPU on `.ips` uploads.
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

    /// Parses a top-level object, turning Foundation's "around character N" into line and column.
    static func object(_ data: Data) throws(ReportParseError) -> [String: Any] {
        try JSONPreflight.check(data)
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            let debug = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            if let offset = characterOffset(in: debug) {
                let (line, column) = lineAndColumn(of: offset, in: data)
                let message = debug.replacingOccurrences(of: " around character \(offset)", with: "")
                    .trimmingCharacters(in: CharacterSet(charactersIn: ". "))
                throw .invalidJSON(message, line: line, column: column)
            }
            if debug.contains("end of file") {
                // Foundation gives no offset here; the input stops mid-document, so point at its end.
                let (line, column) = lineAndColumn(of: data.count, in: data)
                throw .invalidJSON(
                    debug.trimmingCharacters(in: CharacterSet(charactersIn: ". ")) + " (was the report cut short?)",
                    line: line, column: column)
            }
            throw .invalidJSON(debug, line: nil, column: nil)
        }
        guard let object = value as? [String: Any] else {
            throw .invalidJSON("top-level value is not an object", line: 1, column: 1)
        }
        return object
    }

    /// Foundation on Linux reports "… around character 25." (a 0-based UTF-8 byte offset).
    static func characterOffset(in message: String) -> Int? {
        guard let range = message.range(of: "around character ") else { return nil }
        return Int(message[range.upperBound...].prefix { $0.isNumber })
    }

    /// 1-based line and column (in characters) of byte `offset`.
    static func lineAndColumn(of offset: Int, in data: Data) -> (Int, Int) {
        let bytes = [UInt8](data.prefix(max(0, min(offset, data.count))))
        var line = 1
        var lineStart = 0
        for (i, byte) in bytes.enumerated() where byte == 0x0a {
            line += 1
            lineStart = i + 1
        }
        let column = String(decoding: bytes[lineStart...], as: UTF8.self).count + 1
        return (line, column)
    }
}
