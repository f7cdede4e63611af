/// The order of app versions, for the regression rule: dotted numbers compare numerically
/// part by part (`1.10` after `1.9`, `2.0` after `1.99.3`; a missing part is 0), a part that
/// is not a number compares as text after any number, and the version without a number
/// ("") comes first. Reports carry versions as text, with no release dates, so this order is
/// the only one the database can give.
public enum VersionOrder {
    public static func less(_ a: String, _ b: String) -> Bool { compare(a, b) < 0 }

    /// -1, 0 or 1.
    public static func compare(_ a: String, _ b: String) -> Int {
        let left = parts(a)
        let right = parts(b)
        for i in 0..<max(left.count, right.count) {
            let l = i < left.count ? left[i] : .number(0)
            let r = i < right.count ? right[i] : .number(0)
            switch (l, r) {
            case (.number(let x), .number(let y)) where x != y: return x < y ? -1 : 1
            case (.number, .text): return -1
            case (.text, .number): return 1
            case (.text(let x), .text(let y)) where x != y: return x < y ? -1 : 1
            default: continue
            }
        }
        // Equal by parts ("1.0" and "1"): fall back to the text, so the order is total.
        return a == b ? 0 : (a < b ? -1 : 1)
    }

    private enum Part { case number(UInt64), text(String) }

    private static func parts(_ version: String) -> [Part] {
        version.split(whereSeparator: { $0 == "." || $0 == "-" || $0 == "+" || $0 == " " || $0 == "_" }).map { part in
            if let n = UInt64(part) { .number(n) } else { .text(String(part)) }
        }
    }
}
