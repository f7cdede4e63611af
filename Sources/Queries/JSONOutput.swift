import Foundation

/// The one encoder behind every `--json` output and every JSON answer of the HTTP API, so all write the style docs/json.md
/// describes: camelCase keys, timestamps in RFC 3339 UTC (`2026-05-01T12:00:00Z`), absent
/// values left out rather than written as null.
public enum JSONOutput {
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()
}

/// `value` as one JSON document in the shared style.
public func encodeJSON<T: Encodable>(_ value: T) throws -> String {
    String(decoding: try JSONOutput.encoder.encode(value), as: UTF8.self)
}

extension Date {
    /// RFC 3339 UTC, the form human output shows times in too.
    public var rfc3339: String { ISO8601DateFormatter().string(from: self) }
}
