import Foundation
import JSONFormat
import ReportModel
import SQLInterface

/// A group's state as the team set it (docs/triage.md).
public enum GroupStateName: String, Sendable, Codable, CaseIterable {
    case open, resolved, ignored
}

/// How a group was resolved, which decides the versions that reopen it.
public enum Resolution: String, Sendable, Codable, CaseIterable {
    /// Reports in the newest version the group was seen in, or a later one, reopen it.
    case now
    /// Only reports in a version after the newest one the app was seen in reopen it.
    case nextVersion
    /// Reports in the given version or a later one reopen it.
    case version
}

/// What a person asks of a group's state.
public enum GroupStateChange: Sendable, Equatable {
    case resolve(Resolution, version: String?)
    /// All nil: ignored until someone reopens it. Otherwise it wakes when the first condition passes.
    case ignore(until: Int64?, reports: Int?, users: Int?)
    case reopen
}

/// One group's triage: its state, the conditions that end it, and who it is assigned to.
public struct GroupTriage: Sendable, Codable, Equatable {
    public var state: GroupStateName
    public var resolution: Resolution?
    public var resolvedVersion: String?
    public var ignoreUntil: Int64?
    public var ignoreReports: Int?
    public var ignoreUsers: Int?
    /// Reports counted toward `ignoreReports` since the group was ignored.
    public var ignoreReportsSeen: Int
    public var changedAt: Int64?
    /// The version whose report reopened a resolved group (kept until it is resolved again).
    public var regressedVersion: String?
    public var regressedAt: Int64?
    public var assignee: String?

    public static let open = GroupTriage(state: .open, ignoreReportsSeen: 0)

    public init(
        state: GroupStateName, resolution: Resolution? = nil, resolvedVersion: String? = nil, ignoreUntil: Int64? = nil,
        ignoreReports: Int? = nil, ignoreUsers: Int? = nil, ignoreReportsSeen: Int, changedAt: Int64? = nil,
        regressedVersion: String? = nil, regressedAt: Int64? = nil, assignee: String? = nil
    ) {
        self.state = state
        self.resolution = resolution
        self.resolvedVersion = resolvedVersion
        self.ignoreUntil = ignoreUntil
        self.ignoreReports = ignoreReports
        self.ignoreUsers = ignoreUsers
        self.ignoreReportsSeen = ignoreReportsSeen
        self.changedAt = changedAt
        self.regressedVersion = regressedVersion
        self.regressedAt = regressedAt
        self.assignee = assignee
    }

    /// The state as of `now`: an ignore whose time has passed is over even before a report
    /// arrives to record it.
    public func state(at now: Int64) -> GroupStateName {
        if state == .ignored, let until = ignoreUntil, now >= until { return .open }
        return state
    }

    /// The columns `init(_ row: SQLRow)` reads, in its order.
    static let columns = """
        state, resolution, resolved_version, ignore_until, ignore_reports, ignore_users, ignore_reports_seen, changed_at,
        regressed_version, regressed_at, assignee
        """

    init(_ row: SQLRow) throws {
        self.init(
            state: try row.stored(0, "state"),
            resolution: row.isNull(1) ? nil : try row.stored(1, "resolution") as Resolution,
            resolvedVersion: try row.optionalString(2), ignoreUntil: try row.optionalInt64(3), ignoreReports: try row.optionalInt(4),
            ignoreUsers: try row.optionalInt(5), ignoreReportsSeen: try row.int(6), changedAt: try row.optionalInt64(7),
            regressedVersion: try row.optionalString(8), regressedAt: try row.optionalInt64(9), assignee: try row.optionalString(10))
    }
}

/// One entry of a group's history: a state change, an assignment, a comment, a merge, or what
/// the ledger did by itself (`actor` is then `GroupHistoryEntry.automatic`).
public struct GroupHistoryEntry: Sendable, Codable, Equatable {
    public var id: Int64
    public var fingerprint: String
    public var at: Int64
    public var actor: String
    public var action: String
    public var detail: [String: String]
    public var note: String?
    /// The report that reopened or woke the group.
    public var reportId: Int64?

    /// The actor of changes nobody asked for: a regression, an ignore that ran out.
    public static let automatic = "stackline"
}

/// Why a triage request was refused; the text is for the person who sent it.
public enum TriageError: Error, Equatable, CustomStringConvertible {
    case noGroup(String)
    case invalid(field: String, String)
    case notMerged(String)
    case mergeIntoItself
    case kindsDiffer(String, String)

    public var description: String {
        switch self {
        case .noGroup(let fp): "no group with fingerprint \(fp)"
        case .invalid(let field, let why): "\(field): \(why)"
        case .notMerged(let fp): "group \(fp) is not merged into another"
        case .mergeIntoItself: "a group cannot be merged into itself"
        case .kindsDiffer(let a, let b): "a \(a) group cannot be merged into a \(b) group"
        }
    }
}

/// Bounds on what people write: names, notes and comments reach pages, terminals and webhooks.
public enum TriageText {
    public static let maxActorBytes = 256
    public static let maxAssigneeBytes = 256
    public static let maxVersionBytes = 256
    public static let maxNoteBytes = 4_096
    public static let maxCommentBytes = 16_384

    /// `text` when it is within `maxBytes` and holds no control character (newlines and tabs
    /// allowed where `multiline`); otherwise the refusal, naming `field`.
    public static func checked(_ text: String, field: String, maxBytes: Int, multiline: Bool = false) throws(TriageError) -> String {
        guard !text.isEmpty else { throw .invalid(field: field, "must not be empty") }
        guard text.utf8.count <= maxBytes else { throw .invalid(field: field, "at most \(maxBytes) bytes") }
        for scalar in text.unicodeScalars where scalar.properties.generalCategory == .control {
            if multiline && (scalar == "\n" || scalar == "\t") { continue }
            throw .invalid(field: field, "control characters are not allowed")
        }
        return text
    }
}
