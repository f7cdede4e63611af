import JSONFormat
import ReportModel

/// Why one field of an SDK record or configuration was refused: names the field and the problem.
public enum SDKFieldError: Error, Sendable, Equatable, CustomStringConvertible {
    case missing(String)
    /// The field holds the wrong JSON type: field, expected type, actual type.
    case wrongType(String, expected: String, got: String)
    /// The field has the right type but an unusable value: field, why.
    case invalid(String, String)
    /// A configuration key nobody reads (usually a typo).
    case unknownKey(String)
    case namespace(NamespaceNameError)

    public var description: String {
        switch self {
        case .missing(let field): "\(field) is missing"
        case .wrongType(let field, let expected, let got): "\(field) must be \(expected), not \(got)"
        case .invalid(let field, let why): "\(field) \(why)"
        case .unknownKey(let field): "\(field) is not a known key"
        case .namespace(let error): "\(error)"
        }
    }
}

/// Typed reads from a decoded JSON object, each failure naming its field.
struct FieldReader {
    let object: [String: JSONValue]
    /// Prefix of field names in messages (`meta.`, `monitorList[2].`).
    let prefix: String

    func value(_ key: String) -> JSONValue? {
        switch object[key] {
        case nil, .null?: nil
        case let value?: value
        }
    }

    func string(_ key: String) throws(SDKFieldError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else { throw .wrongType(prefix + key, expected: "a string", got: value.typeName) }
        return text
    }

    func requiredString(_ key: String) throws(SDKFieldError) -> String {
        guard let text = try string(key) else { throw .missing(prefix + key) }
        return text
    }

    func integer(_ key: String) throws(SDKFieldError) -> Int64? {
        guard let value = value(key) else { return nil }
        switch value {
        case .integer(let n): return n
        case .unsigned: throw .invalid(prefix + key, "is larger than \(Int64.max)")
        default: throw .wrongType(prefix + key, expected: "an integer", got: value.typeName)
        }
    }

    func bool(_ key: String) throws(SDKFieldError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else { throw .wrongType(prefix + key, expected: "true or false", got: value.typeName) }
        return flag
    }

    func object(_ key: String) throws(SDKFieldError) -> [String: JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .object(let fields) = value else { throw .wrongType(prefix + key, expected: "an object", got: value.typeName) }
        return fields
    }

    func array(_ key: String) throws(SDKFieldError) -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .array(let items) = value else { throw .wrongType(prefix + key, expected: "an array", got: value.typeName) }
        return items
    }
}
