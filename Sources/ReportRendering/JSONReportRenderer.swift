import Foundation
import JSONFormat
import ReportModel

/// Renders a symbolicated report as JSON (the `SymbolicatedReport` Codable shape), with keys in
/// reading order (id, format, kind, status, group, missingBuildIds, …, threads) rather than hash order.
public enum JSONReportRenderer {
    static let keyOrder = [
        "reportId", "input", "duplicate", "state", "error", "report", "id", "format", "kind", "status", "group",
        "missingBuildIds", "app", "os", "arch", "timestamp", "exception",
        "images", "imageSymbols", "threads", "annotations", "warnings", "key", "value", "module", "index", "name", "part", "crashed", "frames", "address", "image",
        "imageOffset", "symbol", "symbolOffset", "function", "offset", "file", "line", "column", "inlined", "inApp", "path",
        "loadAddress", "size", "vmAddress", "type", "signal", "code", "faultAddress", "message", "version", "build",
        "buildId", "detail", "searched", "sources", "source", "outcome", "answeredAt",
    ]

    public static func render(_ report: SymbolicatedReport) throws -> String {
        render(object: .object(try object(report)))
    }

    /// The report as a JSON object, for documents that carry it with more fields (`report
    /// --json` adds the group, `submit --wait --json` the submission).
    public static func object(_ report: SymbolicatedReport) throws -> [String: JSONValue] {
        guard case .object(let fields) = try JSONValue(encoding: report) else { return [:] }
        return fields
    }

    /// Writes a JSON value indented, keys in reading order; strings escaped by `JSONBytes`, the
    /// one escaping every JSON writer shares.
    public static func render(object: JSONValue) -> String {
        var out = JSONBytes()
        write(object, indent: 0, into: &out)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    public static func render(object fields: [String: JSONValue]) -> String { render(object: .object(fields)) }

    private static func rank(_ key: String) -> Int { keyOrder.firstIndex(of: key) ?? keyOrder.count }

    private static func newline(_ indent: Int, into out: inout JSONBytes) {
        out.raw("\n")
        for _ in 0..<indent { out.raw("  ") }
    }

    private static func write(_ value: JSONValue, indent: Int, into out: inout JSONBytes) {
        switch value {
        case .object(let fields):
            if fields.isEmpty { return out.raw("{}") }
            out.raw("{")
            let keys = fields.keys.sorted { (rank($0), $0) < (rank($1), $1) }
            for (i, key) in keys.enumerated() {
                if i > 0 { out.raw(",") }
                newline(indent + 1, into: &out)
                out.string(key)
                out.raw(": ")
                write(fields[key] ?? .null, indent: indent + 1, into: &out)
            }
            newline(indent, into: &out)
            out.raw("}")
        case .array(let items):
            if items.isEmpty { return out.raw("[]") }
            out.raw("[")
            for (i, item) in items.enumerated() {
                if i > 0 { out.raw(",") }
                newline(indent + 1, into: &out)
                write(item, indent: indent + 1, into: &out)
            }
            newline(indent, into: &out)
            out.raw("]")
        case .string(let text): out.string(text)
        case .bool(let flag): out.bool(flag)
        case .integer(let n): out.integer(Int(n))
        case .unsigned(let n): out.integer(n)
        // JSON text never decodes to a non-finite number, and `JSONValue(encoding:)` refuses one.
        case .number(let n): out.number(n)
        case .null: out.raw("null")
        }
    }
}
