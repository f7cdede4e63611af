import Foundation
import ReportModel
import ServiceRuntime

/// How urgent an alert is; chat presets and the mail subject show it.
public enum AlertSeverity: String, Sendable, CaseIterable, Codable {
    case info, warning, error, critical
}

/// What a rule watches (docs/alerts.md gives each one's exact semantics).
public enum AlertRuleKind: Sendable, Equatable {
    /// A group never seen before.
    case newGroup
    /// A group the team resolved that a report of a version at or after the resolution
    /// reopened (docs/triage.md): one event per reopening.
    case regression
    /// A group back in a version after at least one later version without it; a version
    /// counts as "without it" when it has at least `minGapReports` reports of the same app.
    case backAfterGap(minGapReports: Int)
    /// Reports of a group in one hour (`bucketMinutes`) reach `minCount` and exceed
    /// `multiplier` × the median of the `baselineHours` buckets before it, empty ones included.
    case spike(multiplier: Double, minCount: Int, baselineBuckets: Int, bucketMinutes: Int)
    /// A lag group over `maxCount` reports in one app version.
    case hangBudget(maxCount: Int)
    /// Crashlytics' velocity: a group's distinct users in one version within `windowMinutes`
    /// reach `usersPercent` % of the version's users (its launches' users) and `minUsers`.
    case velocity(usersPercent: Double, minUsers: Int, windowMinutes: Int)
    /// A version with at least `minSessions` launches whose crash-free sessions or users fall
    /// below the target (a fraction 0–1; nil: that one is not watched).
    case releaseHealth(crashFreeSessions: Double?, crashFreeUsers: Double?, minSessions: Int)

    /// The name events and webhook bodies carry.
    public var name: String {
        switch self {
        case .newGroup: "new_group"
        case .regression: "regression"
        case .backAfterGap: "back_after_gap"
        case .spike: "spike"
        case .hangBudget: "hang_budget"
        case .velocity: "velocity"
        case .releaseHealth: "release_health"
        }
    }
}

/// Which groups a rule looks at.
public enum AlertGroupKind: String, Sendable {
    case crash, lag, any

    func matches(_ kind: ReportKind) -> Bool { self == .any || rawValue == kind.rawValue }
}

/// One rule of the rules file.
public struct AlertRule: Sendable, Equatable {
    public var name: String
    public var kind: AlertRuleKind
    public var severity: AlertSeverity
    /// Names of entries of the file's `targets`.
    public var targets: [String]
    /// Only groups of this app (nil: every app).
    public var app: String?
    public var groupKind: AlertGroupKind
}

/// A chat tool's incoming-webhook body shape.
public enum WebhookPreset: String, Sendable, CaseIterable {
    case slack, dingtalk, feishu, wecom
}

/// Where a webhook's body comes from.
public enum WebhookBody: Sendable, Equatable {
    /// The documented event JSON (docs/alerts.md).
    case event
    case preset(WebhookPreset)
    /// `{{field}}` placeholders replaced by the event's values, JSON-escaped.
    case template(String)
}

/// An HTTP POST per event. The URL and header values are secrets: never logged or stored.
public struct WebhookTarget: Sendable, Equatable {
    public var url: URL
    public var headers: [String: String]
    public var body: WebhookBody
    public var timeoutSeconds: Double
    /// A DingTalk or Feishu bot's signing secret (`WebhookSigning`); a secret, never logged.
    public var signingSecret: String?
}

/// An SMTP relay and the envelope of the mails sent through it.
public struct EmailTarget: Sendable, Equatable {
    public var host: String
    public var port: Int
    /// Upgrade with STARTTLS before authenticating and sending (refused if the server does not offer it).
    public var startTLS: Bool
    /// PEM certificates to trust for STARTTLS instead of the system's (a relay with a private CA).
    public var caFile: String?
    public var username: String?
    /// A secret: never logged or stored.
    public var password: String?
    public var from: String
    public var to: [String]
    /// Name given in EHLO.
    public var heloName: String
    public var timeoutSeconds: Double
}

/// Where events go.
public enum AlertTarget: Sendable, Equatable {
    case webhook(WebhookTarget)
    case email(EmailTarget)

    /// A description that holds no secret (no URL path, query, header or password).
    public var safeDescription: String {
        switch self {
        case .webhook(let w): "webhook to \(w.url.scheme ?? "http")://\(w.url.host ?? "?")\(w.url.port.map { ":\($0)" } ?? "")"
        case .email(let e): "email via \(e.host):\(e.port) to \(e.to.count) recipient(s)"
        }
    }

    /// Every secret string in this target, so error texts can be scrubbed of them.
    var secrets: [String] {
        switch self {
        case .webhook(let w):
            [w.url.absoluteString, w.url.path, w.url.query ?? "", w.signingSecret ?? ""] + Array(w.headers.values)
        case .email(let e): [e.password ?? ""]
        }
    }
}

/// Retry policy for deliveries.
public struct DeliveryPolicy: Sendable, Equatable {
    /// Attempts before a delivery is marked failed.
    public var maxAttempts: Int
    public var backoff: Backoff

    /// Each wait is the doubling step less up to a fifth, at random, so deliveries that failed
    /// together (a receiver that was down) do not all come back in the same instant.
    public static let jitter: ClosedRange<Int> = 80...100
}

/// A parsed, checked rules file.
public struct AlertConfiguration: Sendable, Equatable {
    /// Where the web view lives (`https://stackline.example.com`): events link to their group under it.
    public var baseURL: String?
    /// Seconds between two evaluations (and delivery passes).
    public var pollSeconds: Double
    public var delivery: DeliveryPolicy
    public var targets: [String: AlertTarget]
    public var rules: [AlertRule]

    public func rule(named name: String) -> AlertRule? { rules.first { $0.name == name } }

    /// Removes every secret of every target from `text` (error messages from libcurl or a
    /// server may quote a URL).
    public func scrub(_ text: String) -> String {
        var text = text
        for secret in targets.values.flatMap(\.secrets) where secret.count >= 4 {
            text = text.replacingOccurrences(of: secret, with: "[redacted]")
        }
        return text
    }
}

/// A rules file that cannot be used: names the file and the field.
public struct AlertRulesError: Error, CustomStringConvertible, Equatable {
    public var file: String
    /// A JSON path such as `rules[2].multiplier`; empty for the whole file.
    public var field: String
    public var problem: String

    public var description: String {
        field.isEmpty ? "alert rules \(file): \(problem)" : "alert rules \(file): \(field): \(problem)"
    }
}
