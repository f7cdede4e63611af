import Foundation

/// The one configured encoder, in its two named styles: every JSON document and body Stackline
/// writes with `JSONEncoder` comes from here (`Tests/JSONFormatTests/OneEncoderFitnessTests`
/// refuses a `JSONEncoder()` anywhere else), so they all follow docs/json.md: camelCase keys,
/// keys sorted, slashes unescaped, timestamps in RFC 3339 UTC (`2026-05-01T12:00:00Z`), absent
/// values left out rather than written as null. The hot paths write the same bytes with
/// `JSONBytes`.
public enum JSONStyle {
    /// Indented: every `--json` output, every JSON answer of the HTTP API, the store's sidecars.
    public static let document: JSONEncoder = encoder([.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])

    /// One line: what is stored in a column or sent to a machine (alert events, webhook and SDK
    /// configuration bodies, the worker protocol's messages, a group's frames), where equal
    /// values must be equal bytes.
    public static let compact: JSONEncoder = encoder([.sortedKeys, .withoutEscapingSlashes])

    private static func encoder(_ formatting: JSONEncoder.OutputFormatting) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = formatting
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}

/// `value` as one JSON document in the shared style.
public func encodeJSON<T: Encodable>(_ value: T) throws -> String {
    String(decoding: try JSONStyle.document.encode(value), as: UTF8.self)
}
