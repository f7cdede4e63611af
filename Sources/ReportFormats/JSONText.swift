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
        // Over the raw buffer with memchr: `Data`'s generic index search showed in the ingest
        // endpoint's profile (scripts/bench-serve.sh; every `.ips` upload asks this several times).
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

    /// True when `needle` occurs anywhere in `bytes`: `UTF8Search` over the raw buffer. Detection
    /// asks this of every report several times, and `Data.range(of:)`'s generic search showed in
    /// the ingest endpoint's profile (scripts/bench-serve.sh).
    static func contains(_ bytes: Data, _ needle: String) -> Bool {
        var needle = needle
        return needle.withUTF8 { pattern in
            bytes.withUnsafeBytes { haystack in UTF8Search.contains(haystack, UnsafeRawBufferPointer(pattern)) }
        }
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
