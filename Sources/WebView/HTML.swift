import Foundation

/// The one HTML escaping of the web view. Every value that comes from a report, a token, the
/// database or a request (function, file, thread, app, version, title, build id, query text)
/// goes through `HTML.escape` before it joins markup; markup itself is only ever built from
/// literals in this module. Escaping `"` and `'` as well makes the same function safe inside
/// quoted attribute values, so there is no second, attribute-only escaper to forget.
public enum HTML {
    /// `s` with `& < > " '` replaced by character references: safe as element text and as a
    /// quoted attribute value.
    public static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            // C0 controls (except tab and newline) and NUL have no place in a page: a report
            // can carry them, and some would make the document invalid.
            case "\t", "\n": out.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// A query string of `pairs` (values percent-encoded), for links that keep the filters.
    public static func query(_ pairs: [(String, String)]) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        let parts = pairs.filter { !$0.1.isEmpty }.map { name, value in
            name + "=" + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
        }
        return parts.isEmpty ? "" : "?" + parts.joined(separator: "&")
    }

    /// A path segment (a fingerprint, a report id) percent-encoded for an `href`.
    public static func pathSegment(_ s: String) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}

/// Dates as the pages show them: UTC, to the minute, the same on every machine.
enum WebDate {
    static func text(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withSpaceBetweenDateAndTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return String(formatter.string(from: date).prefix(16)) + " UTC"
    }
}
