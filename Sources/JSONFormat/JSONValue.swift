import Foundation

/// Any JSON value, decoded without loss of integer precision and without taking a boolean for
/// a number (as `JSONSerialization` does): free-form SDK fields (meta) checked and stored again,
/// the alert rules file, and documents assembled from parts (`report --json`).
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
        // Only non-finite doubles can fail to encode, and JSON text never decodes to one.
        (try? JSONStyle.compact.encode(self)) ?? Data("null".utf8)
    }

    /// Any Encodable as a JSON value, to be placed in a document assembled from parts.
    public init<T: Encodable>(encoding value: T) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: JSONStyle.compact.encode(value))
    }

    /// The array's strings, nil when this is not an array of strings only.
    public var strings: [String]? {
        guard case .array(let items) = self else { return nil }
        var out: [String] = []
        for item in items {
            guard case .string(let s) = item else { return nil }
            out.append(s)
        }
        return out
    }

    /// The value as a `Double` when it is a number of any spelling (`3`, `3.5`, `1e3`).
    public var numberValue: Double? {
        switch self {
        case .integer(let n): Double(n)
        case .unsigned(let n): Double(n)
        case .number(let n): n
        default: nil
        }
    }
}
