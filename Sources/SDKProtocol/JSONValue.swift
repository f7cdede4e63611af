import Foundation
import ReportFormats

/// Any JSON value, decoded without loss of integer precision, so free-form SDK fields (meta)
/// can be checked and stored again as JSON.
public enum JSONValue: Sendable, Equatable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case unsigned(UInt64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(UInt64.self) {
            self = .unsigned(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .unsigned(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// Parses JSON text after the checks every JSON report passes first (UTF-8, nesting, value
    /// count); the error is one line saying what is wrong and where.
    public static func parse(_ data: Data) throws(JSONTextError) -> JSONValue {
        do {
            try JSONPreflight.check(data)
        } catch {
            throw JSONTextError(message: "\(error)")
        }
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch let error as DecodingError {
            switch error {
            case .dataCorrupted(let context):
                throw JSONTextError(message: context.underlyingError.map { "\($0)" } ?? context.debugDescription)
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context):
                throw JSONTextError(message: context.debugDescription)
            @unknown default:
                throw JSONTextError(message: "\(error)")
            }
        } catch {
            throw JSONTextError(message: "\(error)")
        }
    }

    /// The JSON type's name, for messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .unsigned: "an integer"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// Compact JSON with sorted keys (stable bytes for storage).
    public func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Only non-finite doubles can fail to encode, and JSON text never decodes to one.
        return (try? encoder.encode(self)) ?? Data("null".utf8)
    }
}

/// Why bytes are not JSON text.
public struct JSONTextError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
