import Foundation

/// One row of a result, read by column position or by the column's name (the first column of
/// that name, as SQL's `AS` gives it; unqualified: `g.title` is `title`). A read of the wrong
/// type throws rather than guessing: a schema mistake shows at the first query instead of as a
/// wrong count.
public struct SQLRow: Sendable, Hashable {
    public var values: [SQLValue]
    /// The result's column names, shared by all its rows; empty for a row built by hand.
    public var columns: [String]

    public init(_ values: [SQLValue], columns: [String] = []) {
        self.values = values
        self.columns = columns
    }

    public var count: Int { values.count }

    public subscript(_ i: Int) -> SQLValue { i < values.count ? values[i] : .null }

    /// The position of the column named `name`. A linear search: results have a few columns,
    /// and a dictionary per result would cost more than it saves.
    public func position(_ name: String) throws(SQLError) -> Int {
        guard let i = columns.firstIndex(of: name) else { throw .noSuchColumn(name) }
        return i
    }

    public func isNull(_ name: String) throws(SQLError) -> Bool { isNull(try position(name)) }
    public func int64(_ name: String) throws(SQLError) -> Int64 { try int64(try position(name)) }
    public func optionalInt64(_ name: String) throws(SQLError) -> Int64? { try optionalInt64(try position(name)) }
    public func int(_ name: String) throws(SQLError) -> Int { try int(try position(name)) }
    public func optionalInt(_ name: String) throws(SQLError) -> Int? { try optionalInt(try position(name)) }
    public func bool(_ name: String) throws(SQLError) -> Bool { try bool(try position(name)) }
    public func double(_ name: String) throws(SQLError) -> Double { try double(try position(name)) }
    public func optionalDouble(_ name: String) throws(SQLError) -> Double? { try optionalDouble(try position(name)) }
    public func string(_ name: String) throws(SQLError) -> String { try string(try position(name)) }
    public func optionalString(_ name: String) throws(SQLError) -> String? { try optionalString(try position(name)) }
    public func data(_ name: String) throws(SQLError) -> Data { try data(try position(name)) }
    public func optionalData(_ name: String) throws(SQLError) -> Data? { try optionalData(try position(name)) }

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
        guard let v = try optionalDouble(i) else { throw .unexpectedNull(column: i) }
        return v
    }

    public func optionalDouble(_ i: Int) throws(SQLError) -> Double? {
        switch self[i] {
        case .real(let v): return v
        case .integer(let v): return Double(v)
        case .null: return nil
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
    case noSuchColumn(String)

    public var description: String {
        switch self {
        case .noSuchColumn(let name): "no column named \(name)"
        case .unexpectedNull(let c): "column \(c) is NULL"
        case .wrongType(let c, let expected, let found): "column \(c) holds \(found), not \(expected)"
        }
    }
}
