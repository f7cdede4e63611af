/// A 64-bit address, written as `0x…` hex in every JSON Stackline emits or reads.
public struct Address: Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByIntegerLiteral
{
    public var value: UInt64

    public init(_ value: UInt64) { self.value = value }
    public init(integerLiteral value: UInt64) { self.value = value }

    /// Parses `0x1f`, `1f` (hex) or, with `decimal: true`, `31`. Returns nil on anything else.
    public init?(parsing text: some StringProtocol, decimal: Bool = false) {
        var s = Substring(text).trimmingASCIIWhitespace()
        if s.hasPrefix("0x") || s.hasPrefix("0X") {
            s = s.dropFirst(2)
            guard let v = UInt64(s, radix: 16) else { return nil }
            self.value = v
        } else if decimal {
            guard let v = UInt64(s, radix: 10) else { return nil }
            self.value = v
        } else {
            guard let v = UInt64(s, radix: 16) else { return nil }
            self.value = v
        }
    }

    public var description: String { "0x" + String(value, radix: 16) }

    public static func < (a: Address, b: Address) -> Bool { a.value < b.value }

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let n = try? c.decode(UInt64.self) {
            value = n
            return
        }
        let s = try c.decode(String.self)
        guard let a = Address(parsing: s) else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "not a hex address: \(s)")
        }
        value = a.value
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}

extension Substring {
    func trimmingASCIIWhitespace() -> Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" || f == "\r" || f == "\n" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" || l == "\n" { s.removeLast() }
        return s
    }
}
