/// The device a report says it came from, in the report's own words: what a hand-uploaded
/// `.ips`, `.crash`, KSCrash or MetricKit report carries without any SDK meta (issue 32; an SDK
/// report's meta, when there is one, is preferred: docs/search.md). Each value is trimmed and
/// bounded here, where the parsers hand it over, so no format has its own rule.
public struct DeviceInfo: Codable, Sendable, Hashable {
    /// The hardware model identifier, e.g. `iPhone15,2` or `Mac13,1`.
    public var model: String?
    /// The OS version number alone, e.g. `17.2`: the form an SDK's `meta.os_version` has, so a
    /// facet or a search counts both kinds of report alike (`OSVersionNumber`).
    public var osVersion: String?
    /// An anonymous per-device key the report carries (`crashReporterKey`, KSCrash's
    /// `device_app_hash`): counted as the device's user when no SDK names one.
    public var id: String?

    /// Nil when none of the values is usable (absent, blank, or longer than
    /// `ReportLimits.maxIdentityBytes`).
    public init?(model: String?, osVersion: String?, id: String?) {
        self.model = Self.kept(model)
        self.osVersion = Self.kept(osVersion)
        self.id = Self.kept(id)
        if self.model == nil, self.osVersion == nil, self.id == nil { return nil }
    }

    /// Whether `text` is a value as `DeviceInfo` keeps it (a frame reader refuses any other).
    public static func isKept(_ text: String) -> Bool { kept(text) == text }

    /// A value as stored: trimmed, without control characters, nil when blank or over the bound.
    static func kept(_ text: String?) -> String? {
        guard let trimmed = text?.trimmingWhitespace(), !trimmed.isEmpty,
            trimmed.utf8.count <= ReportLimits.maxIdentityBytes,
            !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { return nil }
        return trimmed
    }
}

/// The version number in an OS version as Apple's reports write it: `iPhone OS 17.2 (21C62)`
/// and `macOS 13.0` give `17.2` and `13.0`; a bare `4.3.3` stays as it is. Nil when the text
/// holds no number.
public enum OSVersionNumber {
    public static func of(_ text: String?) -> String? {
        guard let text else { return nil }
        // The first run of digits and dots that starts with a digit, outside parentheses
        // (the build, `(21C62)`, is not the version).
        var depth = 0
        var current = ""
        for ch in text {
            if ch == "(" { depth += 1 } else if ch == ")" { depth = max(0, depth - 1) }
            if depth == 0, ch.isASCII, ch.isNumber || (ch == "." && !current.isEmpty) {
                current.append(ch)
            } else if !current.isEmpty {
                break
            }
        }
        while current.hasSuffix(".") { current.removeLast() }
        return current.isEmpty ? nil : current
    }
}
