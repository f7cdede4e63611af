/// Secret comparisons: token hashes and the web view's session MACs.
public enum ConstantTime {
    /// Compares every byte whatever the first difference, so timing does not reveal where it is
    /// (only the lengths, which are public: hex digests of a fixed size).
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }
}
