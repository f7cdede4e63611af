import Foundation
import ReportModel

/// The `--json` shape of one group (`groups`, `group`, and the `group` of `report --json`;
/// `GET /api/v1/groups`).
public struct GroupJSON: Codable, Sendable, Equatable {
    public var fingerprint: String
    public var kind: String
    public var title: String
    public var count: Int
    public var firstSeen: Date
    public var lastSeen: Date
    public var versions: [String: Int]
    public var rulesVersion: Int
    public var app: String?
    /// Distinct users and sessions among the reports counted (SDK reports name them).
    public var users: Int
    public var sessions: Int
    /// `open`, `resolved` or `ignored` (an ignore whose time has passed reads `open`).
    public var state: String
    /// The version whose report reopened the group after it was resolved.
    public var regressedIn: String?
    public var assignee: String?

    public init(
        fingerprint: String, kind: String, title: String, count: Int, firstSeen: Date, lastSeen: Date, versions: [String: Int],
        rulesVersion: Int, app: String?, users: Int = 0, sessions: Int = 0, state: String = "open", regressedIn: String? = nil,
        assignee: String? = nil
    ) {
        self.fingerprint = fingerprint
        self.kind = kind
        self.title = title
        self.count = count
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.versions = versions
        self.rulesVersion = rulesVersion
        self.app = app
        self.users = users
        self.sessions = sessions
        self.state = state
        self.regressedIn = regressedIn
        self.assignee = assignee
    }
}

/// A group's triage in full (`group FP --json`, `GET /api/v1/groups/{fingerprint}`, and the
/// answer of every state change).
public struct GroupTriageJSON: Codable, Sendable, Equatable {
    public var state: String
    /// `now`, `nextVersion` or `version`, while resolved.
    public var resolution: String?
    /// Reports in this version or later (`nextVersion`: later only) reopen the group.
    public var resolvedVersion: String?
    public var ignoreUntil: Date?
    public var ignoreReports: Int?
    public var ignoreUsers: Int?
    public var ignoreReportsSeen: Int?
    public var changedAt: Date?
    public var regressedIn: String?
    public var regressedAt: Date?
    public var assignee: String?

    public init(
        state: String, resolution: String?, resolvedVersion: String?, ignoreUntil: Date?, ignoreReports: Int?, ignoreUsers: Int?,
        ignoreReportsSeen: Int?, changedAt: Date?, regressedIn: String?, regressedAt: Date?, assignee: String?
    ) {
        self.state = state
        self.resolution = resolution
        self.resolvedVersion = resolvedVersion
        self.ignoreUntil = ignoreUntil
        self.ignoreReports = ignoreReports
        self.ignoreUsers = ignoreUsers
        self.ignoreReportsSeen = ignoreReportsSeen
        self.changedAt = changedAt
        self.regressedIn = regressedIn
        self.regressedAt = regressedAt
        self.assignee = assignee
    }
}

/// One entry of a group's history.
public struct GroupHistoryJSON: Codable, Sendable, Equatable {
    public var id: Int64
    public var at: Date
    /// A token's name, `cli:USER`, or `stackline` for what happened by itself.
    public var actor: String
    /// `resolved`, `ignored`, `reopened`, `regressed`, `woke`, `assigned`, `unassigned`,
    /// `commented`, `merged`, `merged-into`, `unmerged`, `unmerged-from`, `merge-followed`.
    public var action: String
    public var detail: [String: String]
    public var note: String?
    public var reportId: Int64?

    public init(id: Int64, at: Date, actor: String, action: String, detail: [String: String], note: String?, reportId: Int64?) {
        self.id = id
        self.at = at
        self.actor = actor
        self.action = action
        self.detail = detail
        self.note = note
        self.reportId = reportId
    }
}

/// `POST /api/v1/groups/{fingerprint}/state`: `{"state": "resolved", "inNextVersion": true}`,
/// `{"state": "resolved", "inVersion": "3.5"}`, `{"state": "ignored", "untilUsers": 100}`,
/// `{"state": "open"}`; `note` and `assignee` may come with any of them.
public struct GroupStateRequest: Codable, Sendable, Equatable {
    public var state: String
    public var inNextVersion: Bool?
    public var inVersion: String?
    public var until: Date?
    public var untilReports: Int?
    public var untilUsers: Int?
    public var note: String?

    public init(
        state: String, inNextVersion: Bool? = nil, inVersion: String? = nil, until: Date? = nil, untilReports: Int? = nil,
        untilUsers: Int? = nil, note: String? = nil
    ) {
        self.state = state
        self.inNextVersion = inNextVersion
        self.inVersion = inVersion
        self.until = until
        self.untilReports = untilReports
        self.untilUsers = untilUsers
        self.note = note
    }
}

/// `POST /api/v1/groups/{fingerprint}/merge`: `{"into": FINGERPRINT}`.
public struct GroupMergeRequest: Codable, Sendable, Equatable {
    public var into: String
    public var note: String?

    public init(into: String, note: String? = nil) {
        self.into = into
        self.note = note
    }
}

/// `POST /api/v1/groups/{fingerprint}/assign` (`{"assignee": null}` unassigns) and
/// `POST /api/v1/groups/{fingerprint}/comments` (`{"text": …}`).
public struct GroupAssignRequest: Codable, Sendable, Equatable {
    public var assignee: String?
    public var note: String?

    public init(assignee: String?, note: String? = nil) {
        self.assignee = assignee
        self.note = note
    }
}

public struct GroupCommentRequest: Codable, Sendable, Equatable {
    public var text: String

    public init(text: String) { self.text = text }
}

/// The `group FP --json` shape (`GET /api/v1/groups/{fingerprint}`): the group, the frames that
/// decided it, its latest reports.
public struct GroupDetailJSON: Codable, Sendable {
    public var group: GroupJSON
    public var frames: [String]
    public var representativeReportId: Int64?
    public var latestReportIds: [Int64]
    public var representative: SymbolicatedReport?
    public var triage: GroupTriageJSON?
    /// Newest version first.
    public var byVersion: [VersionImpact]?
    /// Fingerprints of the groups merged into this one.
    public var mergedGroups: [String]?
    /// Newest first.
    public var history: [GroupHistoryJSON]?

    public init(
        group: GroupJSON, frames: [String], representativeReportId: Int64?, latestReportIds: [Int64],
        representative: SymbolicatedReport?, triage: GroupTriageJSON? = nil, byVersion: [VersionImpact]? = nil,
        mergedGroups: [String]? = nil, history: [GroupHistoryJSON]? = nil
    ) {
        self.group = group
        self.frames = frames
        self.representativeReportId = representativeReportId
        self.latestReportIds = latestReportIds
        self.representative = representative
        self.triage = triage
        self.byVersion = byVersion
        self.mergedGroups = mergedGroups
        self.history = history
    }
}

/// The answer of a merge or an unmerge: which group went into which.
public struct GroupMergeAnswer: Codable, Sendable, Equatable {
    public var merged: String
    public var into: String

    public init(merged: String, into: String) {
        self.merged = merged
        self.into = into
    }
}
