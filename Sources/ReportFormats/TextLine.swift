import Foundation

/// One line of a text report, read as UTF-8 bytes through a position that only moves forward.
///
/// Hand-written instead of Swift `Regex` on purpose: the regex engine backtracks, so one long
/// line of blanks cost seconds to minutes (quadratic), and even well-formed reports parsed
/// far slower than byte scanning (scripts/bench-parse.sh). Every method here looks at each byte at most a bounded number of times, so a
/// parser built from them runs in time linear in its input.
struct TextLine {
    /// The whole report; lines share it, nothing is copied.
    let bytes: [UInt8]
    /// Where reading continues.
    var position: Int
    /// One past the line's last byte, trailing blanks and `\r` already excluded.
    let end: Int
    /// 1-based, for warnings.
    let number: Int

    init(bytes: [UInt8], start: Int, end: Int, number: Int) {
        var end = end
        while end > start, Self.isWhitespace(bytes[end - 1]) { end -= 1 }
        self.bytes = bytes
        self.position = start
        self.end = end
        self.number = number
    }

    /// Every line of `data`, split at `\n`; a `\r` before it and trailing blanks are dropped.
    /// Lazy: a report of millions of empty lines must not become millions of values at once.
    static func lines(_ data: Data) -> TextLines { TextLines(bytes: [UInt8](data)) }

    static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
    /// Blanks plus the other ASCII whitespace that a line can end with.
    static func isWhitespace(_ byte: UInt8) -> Bool { isBlank(byte) || (0x0a...0x0d).contains(byte) }
    static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
    static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
    static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte) }

    var isAtEnd: Bool { position >= end }
    /// Nothing but blanks remains.
    var isBlankToEnd: Bool { bytes[position..<max(position, end)].allSatisfy(Self.isBlank) }
    var first: UInt8? { position < end ? bytes[position] : nil }

    /// The unread rest of the line.
    var rest: String { string(position..<max(position, end)) }
    /// The unread rest with leading blanks removed.
    var restTrimmed: String {
        var copy = self
        copy.skipBlanks()
        return copy.rest
    }

    /// The unread rest, cut to 120 bytes, for quoting in a warning.
    var excerpt: String {
        let limit = 120
        let stop = min(end, position + limit)
        var text = string(position..<max(position, stop))
        if stop < end { text += "…" }
        return text
    }

    func string(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }

    /// The line from its first non-blank byte: a copy, so the caller can try more than one reading.
    var trimmed: TextLine {
        var copy = self
        copy.skipBlanks()
        return copy
    }

    func hasPrefix(_ literal: StaticString) -> Bool { matches(literal, at: position) }

    func hasSuffix(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        return end - position >= count && matches(literal, at: end - count)
    }

    func matches(_ literal: StaticString, at index: Int) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index >= 0, index + count <= end else { return false }  // overflow: an index into a line in memory plus a literal's length
        return literal.withUTF8Buffer { pattern in
            for i in 0..<count where bytes[index + i] != pattern[i] { return false }
            return true
        }
    }

    /// Consumes `literal` when the line continues with it.
    mutating func skip(_ literal: StaticString) -> Bool {
        guard hasPrefix(literal) else { return false }
        position += literal.utf8CodeUnitCount  // overflow: the line had the literal, so this stays within it
        return true
    }

    /// Consumes spaces and tabs; returns how many.
    @discardableResult
    mutating func skipBlanks() -> Int {
        let start = position
        while position < end, Self.isBlank(bytes[position]) { position += 1 }
        return position - start
    }

    /// Consumes bytes while `predicate` holds; returns their range (possibly empty).
    mutating func take(while predicate: (UInt8) -> Bool) -> Range<Int> {
        let start = position
        while position < end, predicate(bytes[position]) { position += 1 }
        return start..<position
    }

    /// Consumes one or more decimal digits and returns their value; nil (nothing consumed)
    /// when there is no digit, nil (digits consumed) when they overflow `Int`.
    mutating func integer() -> Int? {
        let digits = take(while: Self.isDigit)
        guard !digits.isEmpty else { return nil }
        return Int(string(digits))
    }

    /// Consumes `0x` and one or more hex digits; nil (nothing consumed) when they are not there.
    mutating func hexNumber() -> (value: UInt64?, text: String)? {
        guard matches("0x", at: position), position + 2 < end, Self.isHexDigit(bytes[position + 2]) else { return nil }
        position += 2
        let digits = take(while: Self.isHexDigit)
        let text = string(digits)
        return (UInt64(text, radix: 16), text)
    }

    /// Index of the first `byte` at or after `from`, before the line's end.
    func firstIndex(of byte: UInt8, from: Int? = nil) -> Int? {
        let start = from ?? position
        guard start < end else { return nil }
        return bytes[start..<end].firstIndex(of: byte)
    }

    /// Index of the first space or tab at or after `from`.
    func firstBlank(from: Int? = nil) -> Int? {
        let start = from ?? position
        guard start < end else { return nil }
        return bytes[start..<end].firstIndex(where: Self.isBlank)
    }

    /// Index of the first occurrence of `literal` at or after `from`. Linear: the literals
    /// searched for are a few bytes long.
    func firstIndex(of literal: StaticString, from: Int? = nil) -> Int? {
        var index = from ?? position
        let count = literal.utf8CodeUnitCount
        let head = literal.utf8Start.pointee
        while index + count <= end {  // overflow: an index into a line in memory plus a literal's length
            guard let candidate = firstIndex(of: head, from: index) else { return nil }
            if matches(literal, at: candidate) { return candidate }
            index = candidate + 1
        }
        return nil
    }

    /// The range `from..<to` without blanks at either end.
    func trimming(_ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper, Self.isBlank(bytes[lower]) { lower += 1 }
        while upper > lower, Self.isBlank(bytes[upper - 1]) { upper -= 1 }
        return lower..<upper
    }
}

/// The lines of a report, produced one at a time.
struct TextLines: Sequence, IteratorProtocol {
    let bytes: [UInt8]
    private var start = 0
    private var number = 1

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func next() -> TextLine? {
        guard start <= bytes.count else { return nil }
        let newline = bytes[start...].firstIndex(of: 0x0a) ?? bytes.count
        let line = TextLine(bytes: bytes, start: start, end: newline, number: number)
        number += 1
        start = newline + 1
        return line
    }
}
