import Foundation
import ReportModel

/// Decodes JSON reports whose integers must stay exact: KSCrash and `.ips` write addresses as
/// decimal numbers up to 2^64−1, which `JSONSerialization` rounds through `Double` above 2^53.
/// `JSONDecoder` keeps the number's digits and converts them straight to `UInt64`; its JSON5
/// mode also accepts the trailing commas some crash reporters leave behind.
enum ExactJSON {
    static func decode<T: Decodable>(_ type: T.Type, from data: Data, format: String) throws(ReportParseError) -> T {
        try JSONPreflight.check(data)
        return try decodeChecked(type, from: data, format: format)
    }

    /// `decode` for types with a `JSONCursor` reader: strict JSON of the expected shape is read
    /// by the cursor; anything else (JSON5, a wrong type, an error to word) by JSONDecoder.
    static func decode<T: JSONCursorDecodable>(_ type: T.Type, from data: Data, format: String) throws(ReportParseError) -> T {
        // The cursor counts depth and values as the preflight scan does and gives way past the
        // limits, so a document it reads needs no separate scan (which showed in the ingest
        // profile, scripts/bench-serve.sh); only the
        // UTF-8 check, which the cursor's strings rely on, runs first.
        if let offset = JSONPreflight.firstInvalidUTF8(in: data) { throw .invalidUTF8(offset: offset) }
        if let value = fastDecode(type, from: data) { return value }
        try JSONPreflight.check(data)
        return try decodeChecked(type, from: data, format: format)
    }

    /// The cursor's reading alone; nil where it gives way to JSONDecoder. The bytes must be valid UTF-8.
    static func fastDecode<T: JSONCursorDecodable>(_ type: T.Type, from data: Data) -> T? {
        var cursor = JSONCursor(data)
        do {
            let value = try T(reading: &cursor)
            try cursor.finish()
            return value
        } catch {
            return nil
        }
    }

    /// The cursor's reading of `bytes` (which `JSONPreflight` has passed) against JSONDecoder's:
    /// `.fallback` where the cursor gives way, `.disagreement` where it reads anything
    /// JSONDecoder does not read to an equal value.
    static func compareDecoders<T: JSONCursorDecodable & Equatable>(
        _ type: T.Type, _ bytes: Data, part: String, format: String
    ) -> JSONDecoderAgreement {
        guard let fast = fastDecode(type, from: bytes) else { return .fallback }
        do {
            let reference = try decodeChecked(type, from: bytes, format: format)
            return reference == fast ? .fastPath : .disagreement("\(part): the cursor read \(fast), JSONDecoder \(reference)")
        } catch {
            return .disagreement("\(part): the cursor read \(fast), JSONDecoder refused it: \(error)")
        }
    }

    /// JSONDecoder on bytes `JSONPreflight` has passed.
    static func decodeChecked<T: Decodable>(_ type: T.Type, from data: Data, format: String) throws(ReportParseError) -> T {
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        do {
            return try decoder.decode(T.self, from: data)
        } catch let error as DecodingError {
            throw describe(error, data: data, format: format)
        } catch {
            throw .invalidJSON("\(error)", line: nil, column: nil)
        }
    }

    /// Turns a `DecodingError` into the field path and problem a user can act on.
    static func describe(_ error: DecodingError, data: Data, format: String) -> ReportParseError {
        func path(_ context: DecodingError.Context, _ last: CodingKey? = nil) -> String {
            var text = ""
            for key in context.codingPath + (last.map { [$0] } ?? []) {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += (text.isEmpty ? "" : ".") + key.stringValue
                }
            }
            return text.isEmpty ? "report" : text
        }
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            // JSONDecoder says only "not valid JSON"; JSONSerialization knows the line and column.
            do throws(ReportParseError) {
                _ = try JSONText.object(data)
            } catch {
                return error
            }
            return .invalidJSON("\(context.debugDescription) (a number out of range for 64 bits?)", line: nil, column: nil)
        case .dataCorrupted(let context):
            return .invalidReport(format: format, reason: "\(path(context)): \(context.debugDescription)")
        case .keyNotFound(let key, let context):
            return .invalidReport(format: format, reason: "\(path(context, key)): missing")
        case .typeMismatch(let type, let context):
            return .invalidReport(format: format, reason: "\(path(context)): expected \(describe(type))")
        case .valueNotFound(let type, let context):
            return .invalidReport(format: format, reason: "\(path(context)): expected \(describe(type)), found null")
        @unknown default:
            return .invalidReport(format: format, reason: "\(error)")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is UInt64.Type, is Int.Type, is Int64.Type: "an integer"
        case is Double.Type: "a number"
        case is Bool.Type: "a boolean"
        default: "\(type)".contains("Array") ? "an array" : (("\(type)".contains("Dictionary")) ? "an object" : "\(type)")
        }
    }
}

/// A `Decodable` type that `JSONCursor` can also read, for `ExactJSON`'s fast path.
protocol JSONCursorDecodable: Decodable {
    init(reading cursor: inout JSONCursor) throws(JSONCursor.Unsupported)
}

/// An address written either as a JSON integer (decimal, exact up to 2^64−1) or as a hex string.
struct JSONAddress: Decodable, Equatable, Sendable {
    let address: Address

    init(_ address: Address) { self.address = address }

    /// As `init(from:)` reads it: an unsigned integer, or a string `Address(parsing:)` takes.
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        if try c.peek() == .number {
            address = Address(try c.uint64())
        } else if let parsed = Address(parsing: try c.string()) {
            address = parsed
        } else {
            throw JSONCursor.Unsupported()
        }
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(UInt64.self) {
            address = Address(number)
            return
        }
        if let text = try? container.decode(String.self), let parsed = Address(parsing: text) {
            address = parsed
            return
        }
        throw DecodingError.dataCorruptedError(
            in: container, debugDescription: "expected an address: an integer from 0 to 2^64-1 or a hex string")
    }
}

/// A frame's address: like `JSONAddress`, but a value that is no address (`1e40`, `-1`, `"zz"`)
/// does not fail the whole report. The frame is kept, marked malformed, with a warning that
/// quotes the value, so nothing is silently changed and nothing else is lost.
struct JSONFrameAddress: Decodable, Equatable, Sendable {
    /// Nil when the value is not an address; `text` then says what it was.
    let address: Address?
    /// The value as written, quoted in the warning when it is not an address; empty when it is
    /// one (spelling it for every frame showed in a worker's profile, for a warning never written).
    let text: String

    /// As `init(from:)` reads an integer from 0 to 2^64−1 or a string (same `address`, same
    /// `text`). Anything else gives way: `init(from:)` words those through `Decimal` (`-1`,
    /// `1e40`, `1.5`) or calls them neither (`true`, `{}`), and JSONDecoder also takes `1.0`
    /// and `1e2` as the integers they equal; mirroring that here would only copy its rules.
    /// Null is the caller's: an optional address that is null is absent.
    init(reading c: inout JSONCursor) throws(JSONCursor.Unsupported) {
        switch try c.peek() {
        case .number:
            address = Address(try c.uint64())
            text = ""
        case .string:
            // The bytes are the string's own when it has no escape: parsed where they lie.
            if let parsed = try c.unescapedString({ Address(parsingUTF8: $0) }) {
                address = parsed
                text = ""
            } else {
                self = Self(parsing: try c.string())
            }
        case .object, .array, .literal:
            throw JSONCursor.Unsupported()
        }
    }

    /// A string value: an address, or quoted (its first 40 characters) for the warning.
    private init(parsing string: String) {
        address = Address(parsing: string)
        text = address == nil ? "\"\(string.prefix(40))\"" : ""
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(UInt64.self) {
            address = Address(number)
            text = ""
        } else if let string = try? container.decode(String.self) {
            self = Self(parsing: string)
        } else if let number = try? container.decode(Decimal.self) {
            // Decimal keeps the digits as written (a Double would print 1.8446744073709552e+19).
            address = nil
            text = "\(number)"
        } else {
            address = nil
            text = "a value that is neither a number nor a string"
        }
    }

    /// The raw frame, or a malformed one plus a warning naming `context`.
    func frame(kind: FrameKind, context: @autoclosure () -> String, warnings: inout WarningLog) -> RawFrame {
        guard let address else {
            warnings.append("\(context()): \(text) is not an address (0 to 2^64-1); frame marked malformed")
            return RawFrame(address: 0, kind: kind, malformed: true)
        }
        return RawFrame(address: address, kind: kind)
    }
}

/// A field some reporters write as a string and others as a number (e.g. KSCrash timestamps).
struct JSONLooseString: Decodable, Equatable, Sendable {
    let text: String

    init(text: String) { self.text = text }

    /// As `init(from:)` reads it, for integers and booleans; nil for null. Other numbers give way.
    static func readIfPresent(_ c: inout JSONCursor) throws(JSONCursor.Unsupported) -> JSONLooseString? {
        if c.null() { return nil }
        switch try c.peek() {
        case .string: return JSONLooseString(text: try c.string())
        // As `String(Int64)` writes it: the number's digits, `-` for a negative one.
        case .number: return JSONLooseString(text: String(try c.int()))
        case .literal: return JSONLooseString(text: String(try c.bool()))
        case .object, .array: throw JSONCursor.Unsupported()
        }
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            text = string
        } else if let integer = try? container.decode(Int64.self) {
            text = String(integer)
        } else if let number = try? container.decode(Double.self) {
            text = String(number)
        } else if let flag = try? container.decode(Bool.self) {
            text = String(flag)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected a string or a number")
        }
    }
}
