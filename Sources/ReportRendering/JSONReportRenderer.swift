import Foundation
import ReportModel

/// Renders a symbolicated report as JSON (the `SymbolicatedReport` Codable shape), with keys in
/// reading order (id, format, kind, status, group, missingBuildIds, …, threads) rather than hash order.
public enum JSONReportRenderer {
    static let keyOrder = [
        "reportId", "input", "duplicate", "state", "error", "report", "id", "format", "kind", "status", "group",
        "missingBuildIds", "app", "os", "arch", "timestamp", "exception",
        "images", "threads", "warnings", "index", "name", "part", "crashed", "frames", "address", "image",
        "imageOffset", "symbol", "symbolOffset", "function", "offset", "file", "line", "column", "inlined", "inApp", "path",
        "loadAddress", "size", "vmAddress", "type", "signal", "code", "faultAddress", "message", "version", "build",
    ]

    public static func render(_ report: SymbolicatedReport) throws -> String {
        render(object: try object(report))
    }

    /// The report as a JSON object, for documents that carry it with more fields (`report
    /// --json` adds the group, `submit --wait --json` the submission).
    public static func object(_ report: SymbolicatedReport) throws -> [String: Any] {
        try object(encoding: report, with: JSONEncoder()) as? [String: Any] ?? [:]
    }

    /// Any Encodable as a JSON value, encoded by `encoder`, ready to be placed in a document.
    public static func object<T: Encodable>(encoding value: T, with encoder: JSONEncoder) throws -> Any {
        try JSONSerialization.jsonObject(with: try encoder.encode(value), options: [.fragmentsAllowed])
    }

    /// Writes a JSON value (as `JSONSerialization` returns them) indented, keys in reading order.
    public static func render(object: Any) -> String {
        var out = ""
        write(object, indent: 0, into: &out)
        return out
    }

    private static func rank(_ key: String) -> Int { keyOrder.firstIndex(of: key) ?? keyOrder.count }

    private static func write(_ value: Any, indent: Int, into out: inout String) {
        let pad = String(repeating: "  ", count: indent + 1)
        let closePad = String(repeating: "  ", count: indent)
        switch value {
        case let dict as [String: Any]:
            if dict.isEmpty { out += "{}"; return }
            out += "{\n"
            let keys = dict.keys.sorted { (rank($0), $0) < (rank($1), $1) }
            for (i, key) in keys.enumerated() {
                out += pad + quoted(key) + ": "
                write(dict[key]!, indent: indent + 1, into: &out)
                out += i == keys.count - 1 ? "\n" : ",\n"
            }
            out += closePad + "}"
        case let array as [Any]:
            if array.isEmpty { out += "[]"; return }
            out += "[\n"
            for (i, item) in array.enumerated() {
                out += pad
                write(item, indent: indent + 1, into: &out)
                out += i == array.count - 1 ? "\n" : ",\n"
            }
            out += closePad + "]"
        case let string as String:
            out += quoted(string)
        // Swift values placed in a document by hand (JSONSerialization hands back NSNumber).
        case let flag as Bool where type(of: value) == Bool.self:
            out += flag ? "true" : "false"
        case let number as Int64 where type(of: value) == Int64.self:
            out += String(number)
        case let number as Int where type(of: value) == Int.self:
            out += String(number)
        case let number as NSNumber:
            // JSONSerialization hands back booleans as NSNumber too.
            if String(describing: type(of: number)).contains("Boolean") {
                out += number.boolValue ? "true" : "false"
            } else {
                out += number.stringValue
            }
        case is NSNull:
            out += "null"
        default:
            out += quoted("\(value)")
        }
    }

    private static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20: out += String(format: "\\u%04x", c.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
