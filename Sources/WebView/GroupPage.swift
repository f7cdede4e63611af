import Foundation
import APIModel
import ReportModel

/// Where a group stands across the app's versions.
public struct VersionHistory: Sendable, Equatable {
    /// The version of the group's oldest report.
    public var firstVersion: String?
    /// The latest version the group came back in (`VersionRegression`, the alert rule's
    /// definition, with any version that had reports of the app counting as a gap).
    public var regression: VersionRegression?

    public init(firstVersion: String?, regression: VersionRegression?) {
        self.firstVersion = firstVersion
        self.regression = regression
    }

    /// `groupVersions`: the group's reports per version; `appVersions`: the app's.
    public static func analyse(groupVersions: [String: Int], appVersions: [String: Int], firstVersion: String?) -> VersionHistory {
        VersionHistory(
            firstVersion: firstVersion,
            regression: VersionRegression.latest(groupVersions: groupVersions, appVersions: appVersions, minGapReports: 1))
    }
}

/// What a group's page shows.
public struct GroupPageModel: Sendable {
    /// The group as `GET /api/v1/groups/{fingerprint}` encodes it (frames, latest reports, the
    /// representative report decoded).
    public var group: GroupJSON
    public var frames: [String]
    public var latestReportIds: [Int64]
    public var representativeReportId: Int64?
    public var representative: SymbolicatedReport?
    public var history: VersionHistory
    /// The app's versions in `VersionOrder` (bars follow this order; others after, by count).
    public var appVersions: [String]
    /// The team's side (docs/triage.md): state, who and when, users per version, merges.
    public var triage: GroupTriageJSON?
    public var byVersion: [VersionImpact] = []
    public var changes: [GroupHistoryJSON] = []
    public var mergedGroups: [String] = []
    /// The forms that change the group, for a `triage` or `admin` token: their CSRF token
    /// ("" when the page was asked for with a bearer header, which needs none).
    public var actions: GroupActions?
    /// Where it happens: the group's reports by OS version, device model and app version.
    public var facets: [FacetsJSON] = []

    public init(
        detail: GroupDetailJSON, history: VersionHistory, appVersions: [String], actions: GroupActions? = nil, facets: [FacetsJSON] = []
    ) {
        self.init(
            group: detail.group, frames: detail.frames, latestReportIds: detail.latestReportIds,
            representativeReportId: detail.representativeReportId, representative: detail.representative, history: history,
            appVersions: appVersions)
        triage = detail.triage
        byVersion = detail.byVersion ?? []
        changes = detail.history ?? []
        mergedGroups = detail.mergedGroups ?? []
        self.actions = actions
        self.facets = facets
    }

    public init(group: GroupJSON, frames: [String], latestReportIds: [Int64], representativeReportId: Int64?,
                representative: SymbolicatedReport?, history: VersionHistory, appVersions: [String]) {
        self.group = group
        self.frames = frames
        self.latestReportIds = latestReportIds
        self.representativeReportId = representativeReportId
        self.representative = representative
        self.history = history
        self.appVersions = appVersions
    }
}

/// One group: counts per version, first version, regression, deciding frames, the
/// representative report and links to the latest ones.
public enum GroupPage {
    public static func render(_ m: GroupPageModel) -> String {
        let g = m.group
        var body = "<h1 data-k=\"group-title\">\(HTML.escape(g.title))</h1>"
        var facts: [(String, String)] = [
            ("Kind", "<span class=\"badge \(g.kind == "lag" ? "lag" : "crash")\">\(g.kind == "lag" ? "hang" : "crash")</span>"),
            ("Reports", "<span data-k=\"group-count\">\(g.count)</span>"),
            ("Fingerprint", "<code>\(HTML.escape(g.fingerprint))</code>"),
            ("First seen", WebDate.text(g.firstSeen)),
            ("Last seen", WebDate.text(g.lastSeen)),
        ]
        if let app = g.app { facts.insert(("App", HTML.escape(app)), at: 1) }
        facts.insert(("Users", "<span data-k=\"group-users\">\(g.users)</span>"), at: facts.count - 3)
        facts.insert(("Sessions", "<span data-k=\"group-sessions\">\(g.sessions)</span>"), at: facts.count - 3)
        facts.append(("State", GroupPage.state(m.triage, g)))
        if let assignee = g.assignee { facts.append(("Assignee", "<span data-k=\"group-assignee\">\(HTML.escape(assignee))</span>")) }
        if !m.mergedGroups.isEmpty {
            facts.append(("Merged into it", m.mergedGroups.map { "<code data-k=\"merged:\(HTML.escape($0))\">\(HTML.escape(String($0.prefix(16))))</code>" }.joined(separator: " ")))
        }
        if let first = m.history.firstVersion {
            facts.append(("First version", "<span data-k=\"first-version\">\(HTML.escape(first.isEmpty ? "(none)" : first))</span>"))
        }
        if let r = m.history.regression {
            facts.append(("Regression", "<span class=\"badge regression\" data-k=\"regression\">regression</span> seen in "
                + HTML.escape(r.previous) + ", absent in " + HTML.escape(r.versionsWithout.joined(separator: ", "))
                + ", back in " + HTML.escape(r.version)))
        }
        body += "<dl class=\"facts\">" + facts.map { "<dt>\($0.0)</dt><dd>\($0.1)</dd>" }.joined() + "</dl>"

        // Bars in release order where it is known, from the group's first version on, with the
        // versions it skipped as empty bars (a regression's gap shows); then the versions the
        // app's order lacks, by count.
        let firstIndex = m.appVersions.firstIndex { g.versions[$0] != nil }
        let ordered = firstIndex.map { Array(m.appVersions[$0...]) } ?? []
        let rest = g.versions.keys.filter { !ordered.contains($0) }.sorted { (g.versions[$0] ?? 0, $1) > (g.versions[$1] ?? 0, $0) }
        body += "<h2>Reports per version</h2>"
        body += Charts.bars((ordered + rest).map { (label: $0, count: g.versions[$0] ?? 0) }, highlight: m.history.firstVersion)

        if !m.byVersion.isEmpty {
            body += "<h2>Who it hurts, per version</h2><table><tr><th>Version</th><th>Reports</th><th>Users</th><th>Sessions</th></tr>"
                + m.byVersion.map { v in
                    "<tr data-k=\"impact:\(HTML.escape(v.version))\"><td>\(HTML.escape(v.version.isEmpty ? "(none)" : v.version))</td>"
                        + "<td>\(v.reports)</td><td>\(v.users)</td><td>\(v.sessions)</td></tr>"
                }.joined() + "</table>"
        }
        if !m.facets.isEmpty {
            body += "<h2>Where it happens</h2>" + Facets.render(m.facets)
                + "<p><a href=\"/search" + HTML.query([("where", "group=" + g.fingerprint)]) + "\">Search its reports</a></p>"
        }
        if let actions = m.actions { body += GroupPage.forms(g.fingerprint, actions) }
        if !m.changes.isEmpty {
            body += "<h2>History</h2><ol class=\"history\">" + m.changes.map { e in
                let detail = e.detail.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                return "<li data-k=\"history:\(e.id)\">\(WebDate.text(e.at)) <b>\(HTML.escape(e.actor))</b> \(HTML.escape(e.action))"
                    + (detail.isEmpty ? "" : " (\(HTML.escape(detail)))")
                    + (e.reportId.map { " <a href=\"/reports/\($0)\">#\($0)</a>" } ?? "")
                    + (e.note.map { "<pre class=\"note\">\(HTML.escape($0))</pre>" } ?? "") + "</li>"
            }.joined() + "</ol>"
        }

        body += "<h2>Frames that decided the group</h2><ol class=\"mono\">"
            + m.frames.enumerated().map { "<li data-k=\"fingerprint-frame:\($0.offset)\">\(HTML.escape($0.element))</li>" }.joined()
            + "</ol>"

        if !m.latestReportIds.isEmpty {
            body += "<h2>Latest reports</h2><p>" + m.latestReportIds.map {
                "<a href=\"/reports/\($0)\" data-k=\"latest-report:\($0)\">#\($0)</a>"
            }.joined(separator: " · ") + "</p>"
        }
        if let report = m.representative, let id = m.representativeReportId {
            body += "<h2>Representative report <a href=\"/reports/\(id)\" data-k=\"representative\">#\(id)</a></h2>"
            if let lag = report.lag, !lag.profile.isEmpty || !lag.samples.isEmpty {
                body += ReportView.flame(lag, keyFrames: m.frames)
            }
            body += ReportView.threads(report, only: 1)
        }
        return Layout.page(title: g.title, section: .groups, body: body)
    }
}

/// What the triage forms need: the CSRF token to send back.
public struct GroupActions: Sendable, Equatable {
    public var csrf: String

    public init(csrf: String) { self.csrf = csrf }
}

extension GroupPage {
    static func state(_ t: GroupTriageJSON?, _ g: GroupJSON) -> String {
        var text = "<span class=\"badge state-\(HTML.escape(g.state))\" data-k=\"group-state\(t == nil ? ":" + HTML.escape(g.fingerprint) : "")\">\(HTML.escape(g.state))</span>"
        if let t {
            if g.state == "resolved", let v = t.resolvedVersion {
                text += t.resolution == "nextVersion" ? " reopens after \(HTML.escape(v))" : " reopens in \(HTML.escape(v)) or later"
            }
            if g.state == "ignored" {
                var until: [String] = []
                if let date = t.ignoreUntil { until.append("until " + WebDate.text(date)) }
                if let n = t.ignoreReports { until.append("until \(n) more reports") }
                if let n = t.ignoreUsers { until.append("until \(n) more users") }
                if !until.isEmpty { text += " " + until.joined(separator: " or ") }
            }
        }
        if let v = g.regressedIn {
            text += " <span class=\"badge regression\" data-k=\"regressed\">regressed in \(HTML.escape(v))</span>"
        }
        return text
    }

    /// Plain forms posting to `/groups/FP/actions`: no script, so the page's CSP is unchanged.
    static func forms(_ fingerprint: String, _ a: GroupActions) -> String {
        let target = "/groups/\(HTML.escape(fingerprint))/actions"
        let csrf = "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(a.csrf))\">"
        func form(_ action: String, _ label: String, _ fields: String = "") -> String {
            "<form method=\"post\" action=\"\(target)\" class=\"filters\" data-k=\"action:\(action)\">\(csrf)"
                + "<input type=\"hidden\" name=\"action\" value=\"\(action)\">\(fields)<button type=\"submit\">\(label)</button></form>"
        }
        func field(_ name: String, _ label: String, type: String = "text") -> String {
            "<label>\(label)<input name=\"\(name)\" type=\"\(type)\"\(type == "number" ? " min=\"1\"" : "")></label>"
        }
        return "<h2>Triage</h2><div class=\"actions\">"
            + form("resolve", "Resolve", field("note", "Note"))
            + form("resolve-next", "Resolve in the next version", field("note", "Note"))
            + form("resolve-in", "Resolve in version", field("version", "Version") + field("note", "Note"))
            + form("ignore", "Ignore", field("users", "until more users", type: "number") + field("reports", "or more reports", type: "number")
                + field("note", "Note"))
            + form("reopen", "Reopen")
            + form("assign", "Assign", field("assignee", "Assignee"))
            + form("comment", "Comment", field("text", "Comment"))
            + form("merge", "Merge into", field("into", "Fingerprint"))
            + "</div>"
    }
}
