/// Bytes as lowercase hex, two digits a byte: the one spelling build ids, token secrets and
/// namespace keys share (`Tests/ReportFormatsTests/OneNormaliserTests` keeps it the only one).
public enum HexText {
    public static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
