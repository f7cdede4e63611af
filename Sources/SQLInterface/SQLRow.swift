import Foundation

/// One row of a result, read by column position (statements name their columns in order).
/// A read of the wrong type throws rather than guessing: a schema mistake shows at the first
/// query instead of as a wrong count.
public struct SQLRow: Sendable, Hashable {
    public var values: [SQLValue]

    public init(_ values: [SQLValue]) { self.values = values }

    public var count: Int { values.count }

    public subscript(_ i: Int) -> SQLValue { i < values.count ? values[i] : .null }

    public func isNull(_ i: Int) -> Bool { self[i] == .null }

    public func int64(_ i: Int) throws(SQLError) -> Int64 {
        guard let v = try optionalInt64(i) else { throw .unexpectedNull(column: i) }
        return v
    }

    public func optionalInt64(_ i: Int) throws(SQLError) -> Int64? {
        switch self[i] {
        case .null: return nil
        case .integer(let v): return v
        case let other: throw .wrongType(column: i, expected: "integer", found: other.kindName)
        }
    }

    public func int(_ i: Int) throws(SQLError) -> Int { Int(try int64(i)) }

    public func optionalInt(_ i: Int) throws(SQLError) -> Int? { try optionalInt64(i).map { Int($0) } }

    public func bool(_ i: Int) throws(SQLError) -> Bool { try int64(i) != 0 }

    public func double(_ i: Int) throws(SQLError) -> Double {
        switch self[i] {
        case .real(let v): return v
        case .integer(let v): return Double(v)
        case .null: throw .unexpectedNull(column: i)
        case let other: throw .wrongType(column: i, expected: "real", found: other.kindName)
        }
    }

    public func string(_ i: Int) throws(SQLError) -> String {
        guard let v = try optionalString(i) else { throw .unexpectedNull(column: i) }
        return v
    }

    public func optionalString(_ i: Int) throws(SQLError) -> String? {
        switch self[i] {
        case .null: return nil
        case .text(let v): return v
        case let other: throw .wrongType(column: i, expected: "text", found: other.kindName)
        }
    }

    public func data(_ i: Int) throws(SQLError) -> Data {
        guard let v = try optionalData(i) else { throw .unexpectedNull(column: i) }
        return v
    }

    public func optionalData(_ i: Int) throws(SQLError) -> Data? {
        switch self[i] {
        case .null: return nil
        case .blob(let v): return v
        case .text(let v): return Data(v.utf8)
        case let other: throw .wrongType(column: i, expected: "blob", found: other.kindName)
        }
    }
}

extension SQLValue {
    var kindName: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }
}

/// A row read as something other than what it holds.
public enum SQLError: Error, Equatable, CustomStringConvertible {
    case unexpectedNull(column: Int)
    case wrongType(column: Int, expected: String, found: String)

    public var description: String {
        switch self {
        case .unexpectedNull(let c): "column \(c) is NULL"
        case .wrongType(let c, let expected, let found): "column \(c) holds \(found), not \(expected)"
        }
    }
}
