/// The order of app versions (regressions, the web view's bars): dotted numbers compare numerically
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

/// A group that came back: it had reports in `previous`, none in each of `versionsWithout`
/// (versions between the two in `VersionOrder` that each had enough reports of the app for the
/// absence to mean something), and has reports again in `version`. The one definition the alert
/// rule and the web view's flag both use.
public struct VersionRegression: Sendable, Equatable {
    public var version: String
    public var previous: String
    public var versionsWithout: [String]

    public init(version: String, previous: String, versionsWithout: [String]) {
        self.version = version
        self.previous = previous
        self.versionsWithout = versionsWithout
    }

    /// Whether the group (its reports per version, `groupVersions`) regressed in `version`,
    /// given the app's reports per version. Reports without a version ("") take no part.
    public static func find(
        in version: String, groupVersions: [String: Int], appVersions: [String: Int], minGapReports: Int
    ) -> VersionRegression? {
        guard !version.isEmpty, (groupVersions[version] ?? 0) > 0 else { return nil }
        let earlier = groupVersions.filter { v, n in n > 0 && !v.isEmpty && VersionOrder.less(v, version) }.keys
        guard let previous = earlier.max(by: VersionOrder.less) else { return nil }
        let gap = appVersions.filter { v, n in
            !v.isEmpty && n >= minGapReports && (groupVersions[v] ?? 0) == 0
                && VersionOrder.less(previous, v) && VersionOrder.less(v, version)
        }.keys.sorted(by: VersionOrder.less)
        return gap.isEmpty ? nil : VersionRegression(version: version, previous: previous, versionsWithout: gap)
    }

    /// The latest version the group regressed in: the one to act on.
    public static func latest(groupVersions: [String: Int], appVersions: [String: Int], minGapReports: Int) -> VersionRegression? {
        for version in groupVersions.keys.sorted(by: VersionOrder.less).reversed() {
            if let found = find(in: version, groupVersions: groupVersions, appVersions: appVersions, minGapReports: minGapReports) {
                return found
            }
        }
        return nil
    }
}
