/// Bytes as lowercase hex, two digits a byte: the one spelling build ids, token secrets and
/// namespace keys share (`Tests/ReportFormatsTests/OneNormaliserTests` keeps it the only one).
public enum HexText {
    // Inlinable, so each caller gets a loop specialised to its sequence (a digest, a byte array):
    // called generically from another module it went through the iterator's witness table for
    // every byte, which was most of the cost of a group key's SHA-256 hex in a worker.
    @inlinable
    public static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        let digits: StaticString = "0123456789abcdef"
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for b in bytes {
            out.append(digits.utf8Start[Int(b >> 4)])
            out.append(digits.utf8Start[Int(b & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes two hex digits each spell, either case; nil for an odd count or a character
    /// that is no hex digit. The one reader of hex bytes: namespace keys, PostgreSQL's `bytea`.
    public static func bytes(_ digits: some Collection<UInt8>) -> [UInt8]? {
        guard digits.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var high: UInt8?
        for c in digits {
            guard let n = nibble(c) else { return nil }
            if let h = high {
                out.append(h << 4 | n)
                high = nil
            } else {
                high = n
            }
        }
        return out
    }
}
