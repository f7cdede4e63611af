import Foundation
import JSONFormat

/// An alert as every target receives it: the webhook's JSON body (docs/alerts.md), and what
/// presets, templates and mails are made from. Stored with its event when the rule fires, so
/// every attempt, before or after a restart, sends the same thing.
public struct AlertEvent: Codable, Sendable, Equatable {
    /// The event's id in `alert_events`; receivers may dedupe on it (a delivery is at least once).
    public var id: Int64?
    public var rule: String
    public var severity: String
    /// new_group, regression, back_after_gap, spike, hang_budget, velocity or release_health.
    public var kind: String
    public var fingerprint: String
    /// crash or lag.
    public var groupKind: String
    public var title: String
    public var app: String?
    /// The app version the event is about (regression, hang budget), else the version of the report that raised it.
    public var version: String?
    public var counts: AlertCounts
    /// ISO 8601 times of the group's first and last report.
    public var firstSeen: String
    public var lastSeen: String
    /// Regression: the latest version before `version` that had the group, and the versions between without it.
    public var previousVersion: String?
    public var versionsWithout: [String]?
    /// Spike: the bucket counted, ISO 8601, start inclusive and end exclusive.
    public var windowStart: String?
    public var windowEnd: String?
    /// The group in the web view, when the rules file gives `baseURL`.
    public var link: String?
    /// One line for people: what chat presets and the mail subject say.
    public var summary: String
    /// True for `stackline alerts test`.
    public var test: Bool?

    public init(
        id: Int64?, rule: String, severity: String, kind: String, fingerprint: String, groupKind: String, title: String,
        app: String?, version: String?, counts: AlertCounts, firstSeen: String, lastSeen: String, previousVersion: String? = nil,
        versionsWithout: [String]? = nil, windowStart: String? = nil, windowEnd: String? = nil, link: String?, summary: String,
        test: Bool? = nil
    ) {
        self.id = id
        self.rule = rule
        self.severity = severity
        self.kind = kind
        self.fingerprint = fingerprint
        self.groupKind = groupKind
        self.title = title
        self.app = app
        self.version = version
        self.counts = counts
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.previousVersion = previousVersion
        self.versionsWithout = versionsWithout
        self.windowStart = windowStart
        self.windowEnd = windowEnd
        self.link = link
        self.summary = summary
        self.test = test
    }
}

/// The numbers behind an alert.
public struct AlertCounts: Codable, Sendable, Equatable {
    /// Reports in the group.
    public var total: Int
    /// Reports in the group in `version` (regression, hang budget, new group).
    public var version: Int?
    /// Spike: reports in the window, the baseline's median, and the rule's multiplier × median.
    public var window: Int?
    public var baselineMedian: Double?
    public var threshold: Double?
    /// Hang budget: the rule's maximum per version.
    public var budget: Int?
    /// Velocity: the group's distinct users in the window, and the version's users.
    public var users: Int?
    public var versionUsers: Int?
    /// Release health: the version's sessions and the crash-free share that fell below `threshold`.
    public var sessions: Int?
    public var crashFree: Double?

    public init(
        total: Int, version: Int? = nil, window: Int? = nil, baselineMedian: Double? = nil, threshold: Double? = nil, budget: Int? = nil,
        users: Int? = nil, versionUsers: Int? = nil, sessions: Int? = nil, crashFree: Double? = nil
    ) {
        self.total = total
        self.version = version
        self.window = window
        self.baselineMedian = baselineMedian
        self.threshold = threshold
        self.budget = budget
        self.users = users
        self.versionUsers = versionUsers
        self.sessions = sessions
        self.crashFree = crashFree
    }
}

extension AlertEvent {
    static func isoTime(_ ms: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    /// The JSON body: keys sorted, so equal events are equal bytes.
    public func json() -> Data {
        // Every field is a string, number or bool: encoding cannot fail.
        (try? JSONStyle.compact.encode(self)) ?? Data("{}".utf8)
    }

    public static func decode(_ text: String) throws -> AlertEvent {
        try JSONDecoder().decode(AlertEvent.self, from: Data(text.utf8))
    }

    /// The summary with the link after it, for chat messages and mail bodies.
    var message: String {
        var text = "[\(severity.uppercased())] \(summary)"
        if let link { text += "\n\(link)" }
        return text
    }

    /// A sample of `rule`'s kind, for `stackline alerts test`.
    public static func sample(rule: AlertRule, baseURL: String?, now: Int64) -> AlertEvent {
        let fingerprint = String(repeating: "0", count: 64)
        var event = AlertEvent(
            id: 0, rule: rule.name, severity: rule.severity.rawValue, kind: rule.kind.name, fingerprint: fingerprint,
            groupKind: rule.groupKind == .lag ? "lag" : "crash", title: "Sample alert from stackline alerts test",
            app: rule.app ?? "SampleApp", version: "1.0", counts: AlertCounts(total: 1, version: 1),
            firstSeen: isoTime(now), lastSeen: isoTime(now), link: baseURL.map { "\($0)/groups/\(fingerprint)" },
            summary: "", test: true)
        event.summary = "Test of rule \(rule.name) (\(rule.kind.name)): \(event.title)"
        return event
    }
}
