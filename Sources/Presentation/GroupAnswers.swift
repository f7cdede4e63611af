import APIModel
import Foundation
import ReportModel
import Storage

extension GroupJSON {
    public init(_ g: GroupSummary) { self.init(g, now: Date()) }

    /// The group with its state as of `now` (an ignore whose time has passed reads open).
    public init(_ g: GroupSummary, now: Date) {
        self.init(
            fingerprint: g.fingerprint, kind: g.kind.rawValue, title: g.title, count: g.count, firstSeen: g.firstSeen,
            lastSeen: g.lastSeen, versions: g.versions, rulesVersion: g.rulesVersion, app: g.app, users: g.users,
            sessions: g.sessions, state: g.triage.state(at: now.milliseconds).rawValue, regressedIn: g.triage.regressedVersion,
            assignee: g.triage.assignee)
    }
}

extension GroupTriageJSON {
    public init(_ t: GroupTriage) { self.init(t, now: Date()) }

    public init(_ t: GroupTriage, now: Date) {
        self.init(
            state: t.state(at: now.milliseconds).rawValue, resolution: t.resolution?.rawValue, resolvedVersion: t.resolvedVersion,
            ignoreUntil: t.ignoreUntil.map(Date.init(milliseconds:)), ignoreReports: t.ignoreReports, ignoreUsers: t.ignoreUsers,
            ignoreReportsSeen: t.state == .ignored && t.ignoreReports != nil ? t.ignoreReportsSeen : nil,
            changedAt: t.changedAt.map(Date.init(milliseconds:)), regressedIn: t.regressedVersion,
            regressedAt: t.regressedAt.map(Date.init(milliseconds:)), assignee: t.assignee)
    }
}

extension GroupHistoryJSON {
    public init(_ e: GroupHistoryEntry) {
        self.init(
            id: e.id, at: Date(milliseconds: e.at), actor: e.actor, action: e.action, detail: e.detail, note: e.note,
            reportId: e.reportId)
    }
}

extension GroupDetailJSON {
    public init(_ detail: GroupDetail, representative: SymbolicatedReport?, history: [GroupHistoryEntry] = []) {
        self.init(
            group: GroupJSON(detail.summary), frames: detail.summary.frames,
            representativeReportId: detail.summary.representativeReportId, latestReportIds: detail.latestReportIds,
            representative: representative, triage: GroupTriageJSON(detail.summary.triage),
            byVersion: detail.byVersion,
            mergedGroups: detail.mergedGroups, history: history.map(GroupHistoryJSON.init))
    }
}

/// A group's state in words, for tables and `group` (the caller escapes what it prints).
public enum GroupStateText {
    /// `open`, `regressed in 3.6`, `resolved (3.5 and later reopen)`, `ignored`, …
    public static func short(_ t: GroupTriage, now: Int64) -> String {
        switch t.state(at: now) {
        case .open: t.regressedVersion.map { "regressed in \($0)" } ?? "open"
        case .resolved:
            switch (t.resolution, t.resolvedVersion) {
            case (.nextVersion?, let v?): "resolved (after \(v))"
            case (_, let v?): "resolved (\(v)+)"
            default: "resolved"
            }
        case .ignored: "ignored"
        }
    }

    /// The whole state: what ends it, and who it is assigned to.
    public static func sentence(_ t: GroupTriage, now: Int64) -> String {
        var parts = [short(t, now: now)]
        if t.state(at: now) == .ignored {
            var until: [String] = []
            if let time = t.ignoreUntil { until.append("until \(Date(milliseconds: time).rfc3339)") }
            if let n = t.ignoreReports { until.append("until \(n) more reports (\(t.ignoreReportsSeen) so far)") }
            if let n = t.ignoreUsers { until.append("until \(n) more users") }
            parts.append(until.isEmpty ? "until reopened" : until.joined(separator: " or "))
        }
        if let assignee = t.assignee { parts.append("assigned to \(assignee)") }
        return parts.joined(separator: ", ")
    }
}
