/// A 64-bit address, written as `0x…` hex in every JSON Stackline emits or reads.
public struct Address: Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByIntegerLiteral
{
    public var value: UInt64

    public init(_ value: UInt64) { self.value = value }
    public init(integerLiteral value: UInt64) { self.value = value }

    /// Parses `0x1f`, `1f` (hex) or, with `decimal: true`, `31`, ignoring surrounding blanks.
    /// Returns nil on anything else, including values above 2^64-1.
    public init?(parsing text: some StringProtocol, decimal: Bool = false) {
        // Over the contiguous bytes, not Substring.UTF8View: its index arithmetic showed in a
        // worker's profile (scripts/bench-queue.sh; every frame's address arrives as a JSON string).
        var contiguous = String(text)
        guard let parsed = contiguous.withUTF8({ Address(parsingUTF8: $0, decimal: decimal) }) else { return nil }
        self = parsed
    }

    /// `init(parsing:)` over UTF-8 bytes: `lookup` reads its input as bytes, never as a String per line.
    @inlinable
    public init?<Bytes: BidirectionalCollection<UInt8>>(parsingUTF8 bytes: Bytes, decimal: Bool = false) {
        // Byte-level on purpose: batch lookups parse 100,000s of these per second.
        var utf8 = bytes[...]
        func isBlank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0a || b == 0x0d }
        while let f = utf8.first, isBlank(f) { utf8 = utf8.dropFirst() }
        while let l = utf8.last, isBlank(l) { utf8 = utf8.dropLast() }
        var radix: UInt64 = decimal ? 10 : 16
        if utf8.count > 2, utf8.first == UInt8(ascii: "0"),
            utf8.dropFirst().first == UInt8(ascii: "x") || utf8.dropFirst().first == UInt8(ascii: "X")
        {
            utf8 = utf8.dropFirst(2)
            radix = 16
        }
        guard !utf8.isEmpty else { return nil }
        var v: UInt64 = 0
        for b in utf8 {
            let digit: UInt64
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(b - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f") where radix == 16: digit = UInt64(b - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F") where radix == 16: digit = UInt64(b - UInt8(ascii: "A") + 10)
            default: return nil
            }
            let (m, o1) = v.multipliedReportingOverflow(by: radix)
            let (a, o2) = m.addingReportingOverflow(digit)
            if o1 || o2 { return nil }
            v = a
        }
        self.value = v
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


/// The address arithmetic of symbolication, stated once: the symbolicator, `AddressResolver`
/// and `stackline lookup` (which answers from a symcache without a resolver) all use it.
extension Address {
    /// The file address for a runtime `address` in an image whose lowest mapping is `loadAddress`
    /// and whose own base (`__TEXT.vmaddr`, first `PT_LOAD` page) is `preferredBase`. Wrapping:
    /// a report's addresses are untrusted, and a wrong image base must name no function rather
    /// than trap.
    public static func fileAddress(runtime address: UInt64, loadAddress: UInt64, preferredBase: UInt64) -> UInt64 {
        address &- loadAddress &+ preferredBase
    }

    /// Where a frame's address is looked up: a return address at `address - 1`, inside the call
    /// instruction, as the Swift runtime's backtracer does, so the frame names the call and not
    /// whatever follows it.
    public static func lookupAddress(_ address: UInt64, kind: FrameKind) -> UInt64 {
        kind == .returnAddress && address > 0 ? address - 1 : address
    }
}
