/// A validated namespace name: the SDK's `namespace`, one configuration and key each.
public struct NamespaceName: Sendable, Hashable, Codable, CustomStringConvertible, Comparable {
    public let value: String

    /// Longest name accepted.
    public static let maxLength = 64

    /// Letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 64 bytes: names
    /// travel in query strings, log lines and file names without escaping.
    public init(_ text: String) throws(SDKFieldError) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw .invalid("namespace", "is empty") }
        guard bytes.count <= Self.maxLength else {
            throw .invalid("namespace", "is longer than \(Self.maxLength) bytes")
        }
        func isAlphanumeric(_ b: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
        }
        guard isAlphanumeric(bytes[0]),
            bytes.allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") })
        else {
            throw .invalid("namespace", "'\(text)' may hold only letters, digits, '.', '_' and '-', and must start with a letter or digit")
        }
        value = text
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        try self.init(text)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    public var description: String { value }

    public static func < (lhs: NamespaceName, rhs: NamespaceName) -> Bool { lhs.value < rhs.value }
}
