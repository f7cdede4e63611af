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

    public init(detail: GroupDetailJSON, history: VersionHistory, appVersions: [String]) {
        self.init(
            group: detail.group, frames: detail.frames, latestReportIds: detail.latestReportIds,
            representativeReportId: detail.representativeReportId, representative: detail.representative, history: history,
            appVersions: appVersions)
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
