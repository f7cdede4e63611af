/// Why a namespace name was refused.
public enum NamespaceNameError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case tooLong(Int)
    case characters(String)

    public var description: String {
        switch self {
        case .empty: "namespace is empty"
        case .tooLong(let bytes): "namespace is \(bytes) bytes; at most \(NamespaceName.maxLength) are accepted"
        case .characters(let text):
            "namespace '\(TerminalText.escape(text))' may hold only letters, digits, '.', '_' and '-', and must start with a letter or digit"
        }
    }
}

/// A validated namespace: the reporting SDK's `namespace`, which tags the reports uploaded into
/// it, restricts ingest tokens and names a remote configuration and key.
public struct NamespaceName: Sendable, Hashable, Codable, CustomStringConvertible, Comparable {
    public let value: String

    /// Longest name accepted, in bytes.
    public static let maxLength = 64

    /// ASCII letters, digits, `.`, `_` and `-`, starting with a letter or digit, 1–64 bytes:
    /// names travel in query strings, log lines and metric labels without escaping, and never
    /// look like a command-line option.
    public init(_ text: String) throws(NamespaceNameError) {
        let bytes = Array(text.utf8)
        guard let first = bytes.first else { throw .empty }
        guard bytes.count <= Self.maxLength else { throw .tooLong(bytes.count) }
        func isAlphanumeric(_ b: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
        }
        let punctuation: Set<UInt8> = [UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-")]
        guard isAlphanumeric(first), bytes.allSatisfy({ isAlphanumeric($0) || punctuation.contains($0) }) else {
            throw .characters(text)
        }
        value = text
    }

    public init(from decoder: any Decoder) throws {
        try self.init(try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    public var description: String { value }

    public static func < (lhs: NamespaceName, rhs: NamespaceName) -> Bool { lhs.value < rhs.value }
}
