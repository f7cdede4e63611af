import Foundation

/// A JSON document read as a stream of events, with an explicit stack instead of recursion.
///
/// MetricKit nests every caller inside its callee (`subFrames`), two levels per frame, so a deep
/// stack is a document far deeper than Foundation's recursive decoders can safely take (they are
/// held to 100 levels by `JSONPreflight`). This reader keeps one small entry per open container,
/// looks at each byte once, and reports where each event starts so callers can cut the document.
struct JSONEventReader {
    enum Event: Equatable {
        case beginObject, endObject, beginArray, endArray
        case key(String)
        case string(String)
        /// The number's text as written, so integers stay exact.
        case number(String)
        case bool(Bool)
        case null
    }

    private enum Container { case object, array }
    private enum Expect { case value, valueOrEnd, keyOrEnd, key, colon, commaOrEnd, done }

    let bytes: [UInt8]
    private(set) var position = 0
    /// Where the last event's text starts (its first byte).
    private(set) var eventStart = 0
    private var stack: [Container] = []
    private var expect = Expect.value

    init(_ data: Data) { bytes = [UInt8](data) }

    /// The next event; nil at the end of a complete document.
    mutating func next() throws(ReportParseError) -> Event? {
        while true {
            skipWhitespace()
            eventStart = position
            switch expect {
            case .done:
                guard position == bytes.count else { throw error("unexpected text after the JSON document") }
                return nil
            case .colon:
                guard peek == UInt8(ascii: ":") else { throw error("expected ':' after an object key") }
                position += 1
                expect = .value
            case .key, .keyOrEnd:
                if expect == .keyOrEnd, peek == UInt8(ascii: "}") { return close(.object) }
                guard peek == UInt8(ascii: "\"") else { throw error("expected a quoted object key") }
                let key = try string()
                expect = .colon
                return .key(key)
            case .commaOrEnd:
                let inObject = stack.last == .object
                if peek == UInt8(ascii: ",") {
                    position += 1
                    expect = inObject ? .key : .value
                } else if peek == UInt8(ascii: inObject ? "}" : "]") {
                    return close(inObject ? .object : .array)
                } else {
                    throw error(inObject ? "expected ',' or '}'" : "expected ',' or ']'")
                }
            case .value, .valueOrEnd:
                if expect == .valueOrEnd, peek == UInt8(ascii: "]") { return close(.array) }
                return try value()
            }
        }
    }

    private var peek: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skipWhitespace() {
        while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d { position += 1 }
    }

    private mutating func close(_ container: Container) -> Event {
        position += 1
        stack.removeLast()
        expect = stack.isEmpty ? .done : .commaOrEnd
        return container == .object ? .endObject : .endArray
    }

    private mutating func value() throws(ReportParseError) -> Event {
        guard let byte = peek else { throw error("the document ends where a value is expected (was it cut short?)") }
        let event: Event
        switch byte {
        case UInt8(ascii: "{"):
            position += 1
            stack.append(.object)
            expect = .keyOrEnd
            return .beginObject
        case UInt8(ascii: "["):
            position += 1
            stack.append(.array)
            expect = .valueOrEnd
            return .beginArray
        case UInt8(ascii: "\""): event = .string(try string())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): event = .number(try number())
        case UInt8(ascii: "t"): try literal("true"); event = .bool(true)
        case UInt8(ascii: "f"): try literal("false"); event = .bool(false)
        case UInt8(ascii: "n"): try literal("null"); event = .null
        default: throw error("expected a value")
        }
        expect = stack.isEmpty ? .done : .commaOrEnd
        return event
    }

    private mutating func literal(_ word: StaticString) throws(ReportParseError) {
        let count = word.utf8CodeUnitCount
        // overflow: a position in bytes in memory plus a literal's length
        let matches = position + count <= bytes.count && word.withUTF8Buffer { Array($0) == Array(bytes[position..<position + count]) }
        guard matches else { throw error("expected a value") }
        position += count  // overflow: checked against bytes.count just above
    }

    private mutating func number() throws(ReportParseError) -> String {
        let start = position
        func digits() -> Int {
            let from = position
            while let byte = peek, (0x30...0x39).contains(byte) { position += 1 }
            return position - from
        }
        if peek == UInt8(ascii: "-") { position += 1 }
        guard digits() > 0 else { throw error("a number without digits") }
        if peek == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { throw error("a number without digits after '.'") }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            position += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { position += 1 }
            guard digits() > 0 else { throw error("a number without an exponent") }
        }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// A quoted string starting at `position`; escapes decoded. The bytes are valid UTF-8 (checked before).
    private mutating func string() throws(ReportParseError) -> String {
        position += 1
        var out: [UInt8] = []
        var runStart = position
        while true {
            guard let byte = peek else { throw error("a string is not closed (was the report cut short?)") }
            switch byte {
            case UInt8(ascii: "\""):
                out += bytes[runStart..<position]
                position += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                out += bytes[runStart..<position]
                position += 1
                try escape(into: &out)
                runStart = position
            case 0..<0x20:
                throw error("a control character inside a string")
            default:
                position += 1
            }
        }
    }

    private mutating func escape(into out: inout [UInt8]) throws(ReportParseError) {
        guard let byte = peek else { throw error("a string is not closed (was the report cut short?)") }
        position += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(byte)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0c)
        case UInt8(ascii: "n"): out.append(0x0a)
        case UInt8(ascii: "r"): out.append(0x0d)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xd800..<0xdc00).contains(scalar), bytes[position...].starts(with: [UInt8(ascii: "\\"), UInt8(ascii: "u")]) {
                position += 2
                let low = try hex4()
                scalar = (0xdc00..<0xe000).contains(low) ? 0x10000 + ((scalar - 0xd800) << 10) + (low - 0xdc00) : 0xfffd
            }
            out += Array(String(Unicode.Scalar(scalar) ?? "\u{fffd}").utf8)
        default: throw error("an unknown escape in a string")
        }
    }

    private mutating func hex4() throws(ReportParseError) -> UInt32 {
        guard position + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16)
        else { throw error("\\u not followed by four hex digits") }
        position += 4
        return value
    }

    private func error(_ message: String) -> ReportParseError {
        let (line, column) = JSONText.lineAndColumn(of: position, in: Data(bytes))
        return .invalidJSON(message, line: line, column: column)
    }
}
