import Foundation
import ReportModel
import SQLInterface

/// The type OIDs this client encodes or decodes: built-in types, whose OIDs never change.
enum TypeOID {
    static let unknownType: UInt32 = 0
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let char: UInt32 = 18
    static let name: UInt32 = 19
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let oid: UInt32 = 26
    static let float4: UInt32 = 700
    static let float8: UInt32 = 701
    static let unknown: UInt32 = 705
    static let bpchar: UInt32 = 1042
    static let varchar: UInt32 = 1043
    static let numeric: UInt32 = 1700

    static let textual: Set<UInt32> = [char, name, text, bpchar, varchar, unknown]

    /// Types whose binary form `decodeBinary` reads exactly. A statement with any other result
    /// column asks for text results instead (libpq's PQexecPrepared has one format for all columns).
    static let binaryDecodable: Set<UInt32> = textual.union([bool, bytea, int8, int2, int4, oid, float4, float8])

    /// The type a parameter is declared with when the server cannot infer one (`SELECT ?`).
    static func declared(for value: SQLValue) -> UInt32 {
        switch value {
        case .null: unknownType
        case .integer: int8
        case .real: float8
        case .text: text
        case .blob: bytea
        }
    }
}

/// One parameter as libpq sends it: its bytes and whether they are the type's binary form.
/// Binary where it is exact and simplest (int8, float8, bytea, text into text); otherwise the
/// value's text form, which the server parses into the parameter's type (an integer into an
/// `int4` or `numeric` parameter, `1`/`0` into a `bool`), refusing what does not fit.
struct EncodedParameter {
    var bytes: [UInt8]?
    var binary: Bool

    init(_ value: SQLValue, as type: UInt32) {
        switch value {
        case .null:
            bytes = nil; binary = false
        case .integer(let v) where type == TypeOID.int8:
            bytes = withUnsafeBytes(of: v.bigEndian, Array.init); binary = true
        case .integer(let v):
            bytes = Array(String(v).utf8); binary = false
        case .real(let v) where type == TypeOID.float8:
            bytes = withUnsafeBytes(of: v.bitPattern.bigEndian, Array.init); binary = true
        case .real(let v):
            bytes = Array(Self.text(of: v).utf8); binary = false
        case .text(let s) where type == TypeOID.bytea || TypeOID.textual.contains(type):
            // Binary text is the bytes themselves, so a NUL is refused by the server rather than
            // cutting the string short the way a C string would.
            bytes = Array(s.utf8); binary = true
        case .text(let s):
            bytes = Array(s.utf8); binary = false
        case .blob(let d):
            bytes = Array(d); binary = true
        }
    }

    /// PostgreSQL's spelling of the values Swift spells `inf` and `nan`; others as Swift prints
    /// them, the shortest text that reads back as the same Double.
    static func text(of v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v < 0 ? "-Infinity" : "Infinity" }
        return "\(v)"
    }
}

/// A result value in binary form (the statement asked for binary results, so every column has
/// a type in `TypeOID.binaryDecodable`).
func decodeBinary(_ bytes: UnsafeBufferPointer<UInt8>, type: UInt32, column: Int) throws(PostgresError) -> SQLValue {
    func bigEndian<T: FixedWidthInteger>(_: T.Type) throws(PostgresError) -> T {
        guard bytes.count == MemoryLayout<T>.size else { throw .unsupportedType(oid: type, column: column) }
        var v: T = 0
        for b in bytes { v = (v << 8) | T(truncatingIfNeeded: b) }
        return v
    }
    switch type {
    case TypeOID.int8: return .integer(try bigEndian(Int64.self))
    case TypeOID.int4: return .integer(Int64(try bigEndian(Int32.self)))
    case TypeOID.int2: return .integer(Int64(try bigEndian(Int16.self)))
    case TypeOID.oid: return .integer(Int64(try bigEndian(UInt32.self)))
    case TypeOID.float8: return .real(Double(bitPattern: try bigEndian(UInt64.self)))
    case TypeOID.float4: return .real(Double(Float(bitPattern: try bigEndian(UInt32.self))))
    case TypeOID.bool: return .integer(try bigEndian(UInt8.self) != 0 ? 1 : 0)
    case TypeOID.bytea: return .blob(Data(bytes))
    case _ where TypeOID.textual.contains(type): return .text(String(decoding: bytes, as: UTF8.self))
    default: throw .unsupportedType(oid: type, column: column)
    }
}

/// A result value in text form: for statements with a column of a type outside
/// `TypeOID.binaryDecodable` (numeric, timestamptz, jsonb, arrays…), whose text form is what
/// the caller gets, as `.text`.
func decodeText(_ text: String, type: UInt32, column: Int) throws(PostgresError) -> SQLValue {
    switch type {
    case TypeOID.int8, TypeOID.int4, TypeOID.int2, TypeOID.oid:
        guard let v = Int64(text) else { throw .unsupportedType(oid: type, column: column) }
        return .integer(v)
    case TypeOID.float8, TypeOID.float4:
        guard let v = Double(text) else { throw .unsupportedType(oid: type, column: column) }
        return .real(v)
    case TypeOID.bool:
        return .integer(text == "t" ? 1 : 0)
    case TypeOID.numeric:
        // What `SUM` and `AVG` of integers answer: an integer when it is one, as SQLite's would be.
        if let v = Int64(text) { return .integer(v) }
        if let v = Double(text) { return .real(v) }
        return .text(text)
    case TypeOID.bytea:
        guard let d = hexBytea(text) else { throw .unsupportedType(oid: type, column: column) }
        return .blob(d)
    default:
        return .text(text)
    }
}

/// bytea's text output (`bytea_output = hex`, the default since 9.0): `\x` then two hex digits a byte.
private func hexBytea(_ text: String) -> Data? {
    let utf8 = text.utf8
    guard utf8.starts(with: "\\x".utf8), let bytes = HexText.bytes(utf8.dropFirst(2)) else { return nil }
    return Data(bytes)
}
