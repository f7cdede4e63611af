import CElfUtils

/// Strings shared by all units of one file, interned by the address libdw hands out
/// (names point into `.debug_str`, so equal pointers are equal strings).
final class StringTable {
    private(set) var strings: [String] = []
    private var byPointer: [UInt: Int32] = [:]
    private var byValue: [String: Int32] = [:]

    func intern(_ p: UnsafePointer<CChar>) -> Int32 {
        let key = UInt(bitPattern: p)
        if let i = byPointer[key] { return i }
        let i = intern(String(cString: p))
        byPointer[key] = i
        return i
    }

    func intern(_ s: String) -> Int32 {
        if let i = byValue[s] { return i }
        let i = Int32(strings.count)
        strings.append(s)
        byValue[s] = i
        return i
    }

    subscript(i: Int32) -> String? { i >= 0 ? strings[Int(i)] : nil }
}
