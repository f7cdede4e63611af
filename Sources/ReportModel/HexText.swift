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
}
