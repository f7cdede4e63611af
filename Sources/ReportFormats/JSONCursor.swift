import Foundation
import ReportModel

/// A strict JSON reader that pulls values straight into the caller's structs: no tree of values,
/// no Codable containers, no `String` for a key it only compares.
///
/// Written by hand because it is a measured hot path: decoding `.ips` bodies through
/// `JSONDecoder` was the largest part of `stackline serve`'s CPU under `scripts/bench-serve.sh`,
/// most of it in Codable's generic containers rather than in scanning, and decoding the Swift
/// runtime's JSON reports a large part of a worker's under `scripts/bench-queue.sh` (30-frame
/// crashes). `scripts/bench-parse.sh` times both formats.
///
/// It reads strict JSON (RFC 8259) only. On anything else (JSON5's comments, trailing commas or
/// quotes, escaped keys, surrogate escapes, a number written with a fraction where an integer is
/// expected, a value of an unexpected type, a repeated key) it stops with `Unsupported`, and the
/// caller decodes the same bytes with `ExactJSON`, which accepts JSON5 and words the error. So
/// what it accepts it must read exactly as `JSONDecoder` reads it (held by `IPSFastPathTests`,
/// `SwiftBacktraceFastPathTests` and the `apple-ips-decoders` and `swift-backtrace-decoders` fuzz
/// targets); what it refuses costs only time.
///
/// The bytes must be valid UTF-8 (`JSONPreflight.firstInvalidUTF8`). Depth and the number of
/// values are counted as `JSONPreflight` counts them and held to the same limits (past them the
/// cursor gives way, and the preflight scan before JSONDecoder words the refusal); the depth
/// limit also bounds `skipValue`'s recursion.
struct JSONCursor {
    /// Not strict JSON of the expected shape: decode with `ExactJSON` instead.
    struct Unsupported: Error {}

    /// A member's key: where its text lies (escapes excluded, so the bytes are the key).
    struct Key {
        fileprivate let range: Range<Int>
    }

    /// The document, read through a pointer into `storage`: as a `[UInt8]` in this inout struct,
    /// every byte cost a bounds check and a reload of the array, and the scanning loops were
    /// a large part of an `.ips` parse (perf under scripts/bench-serve.sh). Every read below is
    /// behind a `position < bytes.count` check, as it was with the array.
    private let bytes: UnsafeBufferPointer<UInt8>
    private let storage: Storage
    private var position = 0
    /// True right after `{` or `[`: the first member or element has no comma before it.
    private var atContainerStart = false
    private var depth = 0
    /// Containers and commas, plus the document itself: `JSONPreflight`'s count.
    private var values = 1

    init(_ data: Data) {
        storage = Storage(data)
        bytes = UnsafeBufferPointer(storage.pointer)
    }

    /// The cursor's own copy of the document; copies of a cursor share it (they only read).
    private final class Storage {
        let pointer: UnsafeMutableBufferPointer<UInt8>

        init(_ data: Data) {
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: data.count)
            let copied = data.copyBytes(to: buffer)
            pointer = UnsafeMutableBufferPointer(rebasing: buffer[0..<copied])
        }

        deinit { pointer.deallocate() }
    }

    /// Ends the document: only whitespace may follow it.
    mutating func finish() throws(Unsupported) {
        skipWhitespace()
        guard position == bytes.count else { throw Unsupported() }
    }

    // MARK: Containers

    mutating func beginObject() throws(Unsupported) {
        try consume(UInt8(ascii: "{"))
        try open()
    }

    /// The next member's key, with its `:` consumed: the caller then reads or skips the value.
    /// Nil at the object's `}`.
    mutating func nextKey() throws(Unsupported) -> Key? {
        guard try another(before: UInt8(ascii: "}")) else { return nil }
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw Unsupported() }
        let start = position + 1
        var end = start
        let count = bytes.count
        while end < count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") { break }
            guard byte != UInt8(ascii: "\\"), byte >= 0x20 else { throw Unsupported() }
            end += 1
        }
        guard end < bytes.count else { throw Unsupported() }
        position = end + 1
        try consume(UInt8(ascii: ":"))
        return Key(range: start..<end)
    }

    /// True when `key` is `name`, byte for byte. JSONDecoder matches keys by `String` equality,
    /// which is canonical equivalence; for an ASCII name the two agree unless the name holds one
    /// of the three ASCII characters with a non-ASCII canonical twin (`K`: U+212A, `` ` ``:
    /// U+1FEF, `;`: U+037E). No name a reader asks for does.
    func key(_ key: Key, is name: StaticString) -> Bool {
        assert(name.withUTF8Buffer { !$0.contains { $0 == UInt8(ascii: "K") || $0 == UInt8(ascii: "`") || $0 == UInt8(ascii: ";") } },
               "\(name) has a character JSONDecoder would also match in a non-ASCII form")
        guard key.range.count == name.utf8CodeUnitCount else { return false }
        guard let base = bytes.baseAddress else { return key.range.isEmpty }
        return memcmp(base + key.range.lowerBound, name.utf8Start, key.range.count) == 0
    }

    /// True when `key` is `name` as JSONDecoder matches keys (canonical equivalence), for the
    /// names `key(_:is:)` refuses: byte for byte when the key is ASCII, else as `String`s, so
    /// `crashReporter\u{212A}ey` (a Kelvin sign) matches `crashReporterKey` here as it does there.
    func key(_ key: Key, equivalentTo name: String) -> Bool {
        guard let base = bytes.baseAddress else { return key.range.isEmpty && name.isEmpty }
        let raw = UnsafeBufferPointer(start: base + key.range.lowerBound, count: key.range.count)
        if raw.allSatisfy({ $0 < 0x80 }) {
            return raw.count == name.utf8.count && raw.elementsEqual(name.utf8)
        }
        return String(decoding: raw, as: UTF8.self) == name
    }

    /// The key's text (for maps whose keys are data, such as `.ips` `asi`).
    func text(of key: Key) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[key.range]), as: UTF8.self) }

    mutating func beginArray() throws(Unsupported) {
        try consume(UInt8(ascii: "["))
        try open()
    }

    private mutating func open() throws(Unsupported) {
        depth += 1
        values += 1
        guard depth <= ReportLimits.maxJSONDepth else { throw Unsupported() }
        atContainerStart = true
    }

    /// True when another element follows (the caller then reads it); false at the array's `]`.
    mutating func nextElement() throws(Unsupported) -> Bool {
        try another(before: UInt8(ascii: "]"))
    }

    /// The one rule of both containers: `closer` ends it (false); otherwise a member or element
    /// follows (true), after a comma unless it is the first. `{"a":1,}` and `[1,]` never end
    /// here: the comma is consumed, and the `}` or `]` after it is then no key or value.
    private mutating func another(before closer: UInt8) throws(Unsupported) -> Bool {
        skipWhitespace()
        guard position < bytes.count else { throw Unsupported() }
        if bytes[position] == closer {
            position += 1
            atContainerStart = false
            depth -= 1
            return false
        }
        if !atContainerStart {
            try consume(UInt8(ascii: ","))
            values += 1
            guard values <= ReportLimits.maxJSONValues else { throw Unsupported() }
        }
        atContainerStart = false
        return true
    }

    /// Records that a member was read, so a repeated key stops the fast path (which of two equal
    /// keys JSONDecoder keeps is its business).
    func once(_ seen: inout UInt32, _ bit: UInt32) throws(Unsupported) {
        guard seen & bit == 0 else { throw Unsupported() }
        seen |= bit
    }

    // MARK: Values

    /// The kinds of value `peek` tells apart.
    enum Kind { case object, array, string, number, literal }

    /// What comes next, unread.
    mutating func peek() throws(Unsupported) -> Kind {
        skipWhitespace()
        guard position < bytes.count else { throw Unsupported() }
        switch bytes[position] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        default: return .literal
        }
    }

    /// Consumes a `null` if one comes next: an optional member that is null is absent, as
    /// `decodeIfPresent` reads it.
    mutating func null() -> Bool {
        skipWhitespace()
        guard matches("null") else { return false }
        position += 4
        return true
    }

    mutating func bool() throws(Unsupported) -> Bool {
        skipWhitespace()
        if matches("true") {
            position += 4
            return true
        }
        if matches("false") {
            position += 5
            return false
        }
        throw Unsupported()
    }

    mutating func string() throws(Unsupported) -> String {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw Unsupported() }
        let start = position + 1
        var end = start
        let count = bytes.count
        while end < count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") {
                // The bytes are valid UTF-8: the caller's preflight checked the whole document.
                position = end + 1
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                position = end
                return try escapedString(from: start)
            }
            guard byte >= 0x20 else { throw Unsupported() }
            end += 1
        }
        position = end
        throw Unsupported()
    }

    /// An unescaped string's bytes handed to `read`, without making a `String` of them (every
    /// frame's address arrives as a string and is only parsed). Nil, with the cursor still on
    /// the string, when it holds an escape or `read` returns nil: the caller then reads it with
    /// `string()`, which words or refuses what this left alone.
    mutating func unescapedString<T>(_ read: (UnsafeBufferPointer<UInt8>) -> T?) throws(Unsupported) -> T? {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw Unsupported() }
        let start = position + 1
        var end = start
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") {
                guard let value = read(UnsafeBufferPointer(rebasing: bytes[start..<end])) else { return nil }
                position = end + 1
                return value
            }
            guard byte != UInt8(ascii: "\\"), byte >= 0x20 else { return nil }
            end += 1
        }
        return nil
    }

    mutating func stringIfPresent() throws(Unsupported) -> String? {
        null() ? nil : try string()
    }

    /// An array of `element`s, or nil for null.
    mutating func arrayIfPresent<Element>(
        _ element: (inout JSONCursor) throws(Unsupported) -> Element
    ) throws(Unsupported) -> [Element]? {
        if null() { return nil }
        var elements: [Element] = []
        try beginArray()
        while try nextElement() { elements.append(try element(&self)) }
        return elements
    }

    /// A non-negative integer written as plain digits (no sign, fraction or exponent).
    mutating func uint64() throws(Unsupported) -> UInt64 {
        let (negative, magnitude) = try integer()
        guard !negative else { throw Unsupported() }
        return magnitude
    }

    mutating func int() throws(Unsupported) -> Int {
        let (negative, magnitude) = try integer()
        if negative {
            guard magnitude != 0, magnitude <= UInt64(Int.max) else { throw Unsupported() }
            return -Int(magnitude)
        }
        guard magnitude <= UInt64(Int.max) else { throw Unsupported() }
        return Int(magnitude)
    }

    /// Skips one value of any kind, checking it is strict JSON.
    mutating func skipValue() throws(Unsupported) {
        switch try peek() {
        case .object:
            try beginObject()
            while try nextKey() != nil { try skipValue() }
        case .array:
            try beginArray()
            while try nextElement() { try skipValue() }
        case .string:
            try skipString()
        case .number:
            try skipNumber()
        case .literal:
            if null() { return }
            _ = try bool()
        }
    }

    // MARK: Scanning

    private mutating func skipWhitespace() {
        var p = position
        let count = bytes.count
        while p < count {
            switch bytes[p] {
            case 0x20, 0x09, 0x0a, 0x0d: p += 1
            default:
                position = p
                return
            }
        }
        position = p
    }

    private mutating func consume(_ byte: UInt8) throws(Unsupported) {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == byte else { throw Unsupported() }
        position += 1
    }

    private func matches(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }  // overflow: a position in bytes in memory plus a literal's length
        return word.withUTF8Buffer { word in
            for i in 0..<count where bytes[position + i] != word[i] { return false }
            return true
        }
    }

    /// Sign and magnitude of `-?(0|[1-9][0-9]*)` that no fraction or exponent follows.
    private mutating func integer() throws(Unsupported) -> (negative: Bool, magnitude: UInt64) {
        skipWhitespace()
        var negative = false
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") {
            negative = true
            position += 1
        }
        let start = position
        var value: UInt64 = 0
        while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 {
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(bytes[position] - 0x30))
            guard !overflow1, !overflow2 else { throw Unsupported() }
            value = sum
            position += 1
        }
        let digits = position - start
        guard digits > 0, !(digits > 1 && bytes[start] == 0x30) else { throw Unsupported() }
        if position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): throw Unsupported()
            default: break
            }
        }
        return (negative, value)
    }

    private mutating func skipNumber() throws(Unsupported) {
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
        let start = position
        skipDigits()
        guard position > start, !(position - start > 1 && bytes[start] == 0x30) else { throw Unsupported() }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            let fraction = position
            skipDigits()
            guard position > fraction else { throw Unsupported() }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            let exponent = position
            skipDigits()
            guard position > exponent else { throw Unsupported() }
        }
    }

    private mutating func skipDigits() {
        while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 { position += 1 }
    }

    private mutating func skipString() throws(Unsupported) {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw Unsupported() }
        var p = position + 1
        let count = bytes.count
        while p < count {
            let byte = bytes[p]
            p += 1
            if byte == UInt8(ascii: "\"") {
                position = p
                return
            }
            if byte == UInt8(ascii: "\\") {
                position = p
                _ = try escape()
                p = position
            } else if byte < 0x20 {
                throw Unsupported()
            }
        }
        position = p
        throw Unsupported()
    }

    /// The rest of a string that holds an escape, `start` being its first byte.
    private mutating func escapedString(from start: Int) throws(Unsupported) -> String {
        var text = Array(UnsafeBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            if byte == UInt8(ascii: "\"") { return String(decoding: text, as: UTF8.self) }
            if byte == UInt8(ascii: "\\") {
                let scalar = try escape()
                text.append(contentsOf: String(scalar).utf8)
            } else if byte < 0x20 {
                throw Unsupported()
            } else {
                text.append(byte)
            }
        }
        throw Unsupported()
    }

    /// The escape after a backslash. Surrogates (`\ud83d`) stop the fast path: pairing them, and
    /// what to do with a lone one, is left to JSONDecoder.
    private mutating func escape() throws(Unsupported) -> Unicode.Scalar {
        guard position < bytes.count else { throw Unsupported() }
        let byte = bytes[position]
        position += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return Unicode.Scalar(byte)
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            guard position + 4 <= bytes.count else { throw Unsupported() }
            var value: UInt32 = 0
            for byte in bytes[position..<position + 4] {
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw Unsupported()
                }
                value = value << 4 | UInt32(digit)
            }
            position += 4
            guard let scalar = Unicode.Scalar(value) else { throw Unsupported() }
            return scalar
        default:
            throw Unsupported()
        }
    }
}
