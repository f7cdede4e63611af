import Foundation
import APIModel

/// The landing page's filters, as the form holds them (text, so the form shows what was typed).
public struct GroupsFilterForm: Sendable, Equatable {
    public var kind = ""
    public var app = ""
    public var version = ""
    public var namespace = ""
    /// A duration (`24h`, `7d`) or a date, as `stackline groups --since` takes it.
    public var since = ""
    public init(kind: String = "", app: String = "", version: String = "", namespace: String = "", since: String = "") {
        self.kind = kind
        self.app = app
        self.version = version
        self.namespace = namespace
        self.since = since
    }

    var pairs: [(String, String)] { [("kind", kind), ("app", app), ("version", version), ("namespace", namespace), ("since", since)] }
}

/// What the groups page shows: one page of groups (as `GET /api/v1/groups` encodes them) and
/// each one's reports per day.
public struct GroupsPageModel: Sendable {
    public var groups: [GroupJSON]
    /// Reports per day by fingerprint, oldest day first, `trendDays` long.
    public var trends: [String: [Int]]
    public var trendDays: Int
    public var filter: GroupsFilterForm
    /// 1-based page number.
    public var page: Int
    /// Groups per page (links keep it when it is not the default).
    public var perPage: Int
    public var hasNextPage: Bool
    /// A filter the server refused (shown above the table), nil when all were valid.
    public var filterError: String?

    /// Groups per page unless the request asks otherwise.
    public static let defaultPerPage = 25

    public init(groups: [GroupJSON], trends: [String: [Int]], trendDays: Int, filter: GroupsFilterForm, page: Int,
                perPage: Int = defaultPerPage, hasNextPage: Bool, filterError: String? = nil) {
        self.perPage = perPage
        self.groups = groups
        self.trends = trends
        self.trendDays = trendDays
        self.filter = filter
        self.page = page
        self.hasNextPage = hasNextPage
        self.filterError = filterError
    }
}

/// The landing page: crash and hang groups, most frequent first.
public enum GroupsPage {
    public static func render(_ m: GroupsPageModel) -> String {
        let f = m.filter
        func option(_ value: String, _ title: String) -> String {
            "<option value=\"\(value)\"\(f.kind == value ? " selected" : "")>\(title)</option>"
        }
        func field(_ name: String, _ label: String, _ value: String, _ placeholder: String) -> String {
            "<label>\(label)<input name=\"\(name)\" value=\"\(HTML.escape(value))\" placeholder=\"\(placeholder)\"></label>"
        }
        var body = "<h1>Groups</h1>"
        body += "<form class=\"filters\" method=\"get\" action=\"/\">"
            + "<label>Kind<select name=\"kind\">" + option("", "all") + option("crash", "crashes") + option("lag", "hangs") + "</select></label>"
            + field("app", "App", f.app, "any") + field("version", "Version", f.version, "any")
            + field("namespace", "Namespace", f.namespace, "any") + field("since", "Since", f.since, "7d, 24h, 2026-11-01")
            + "<button type=\"submit\">Filter</button></form>"
        if let error = m.filterError { body += "<p class=\"error\" data-k=\"filter-error\">\(HTML.escape(error))</p>" }
        if m.groups.isEmpty {
            body += "<p class=\"muted\" data-k=\"no-groups\">No groups match.</p>"
        } else {
            body += "<table class=\"groups\"><thead><tr><th>Kind</th><th>Title</th><th class=\"num\">Reports</th><th class=\"num\">Users</th><th>Versions</th>"
                + "<th>First seen</th><th>Last seen</th><th>Last \(m.trendDays) days</th></tr></thead><tbody>"
            for g in m.groups {
                let fp = HTML.escape(g.fingerprint)
                let versions = g.versions.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
                let versionText = versions.prefix(4).map { "<span class=\"nowrap\">" + HTML.escape($0.key.isEmpty ? "(none)" : $0.key) + " <span class=\"muted\">×\($0.value)</span></span>" }
                    .joined(separator: ", ") + (versions.count > 4 ? " <span class=\"muted\">+\(versions.count - 4)</span>" : "")
                body += "<tr data-k=\"group:\(fp)\">"
                    + "<td><span class=\"badge \(g.kind == "lag" ? "lag" : "crash")\">\(g.kind == "lag" ? "hang" : "crash")</span></td>"
                    + "<td class=\"title\"><a href=\"/groups/\(HTML.pathSegment(g.fingerprint))\" data-k=\"group-title:\(fp)\">\(HTML.escape(g.title))</a>"
                    + (g.state == "open" && g.regressedIn == nil ? "" : " " + GroupPage.state(nil, g))
                    + (g.app.map { "<div class=\"muted\">\(HTML.escape($0))</div>" } ?? "") + "</td>"
                    + "<td class=\"num\" data-k=\"group-count:\(fp)\">\(g.count)</td>"
                    + "<td class=\"num\" data-k=\"group-users:\(fp)\">\(g.users)</td>"
                    + "<td>\(versionText)</td><td class=\"nowrap\">\(WebDate.text(g.firstSeen))</td><td class=\"nowrap\">\(WebDate.text(g.lastSeen))</td>"
                    + "<td>\(Charts.trend(m.trends[g.fingerprint] ?? Array(repeating: 0, count: m.trendDays)))</td></tr>"
            }
            body += "</tbody></table>"
        }
        var pager = ""
        let size = m.perPage == GroupsPageModel.defaultPerPage ? [] : [("per_page", String(m.perPage))]
        func link(_ page: Int) -> String { "/" + HTML.escape(HTML.query(f.pairs + size + [("page", String(page))])) }
        if m.page > 1 { pager += "<a rel=\"prev\" data-k=\"previous-page\" href=\"\(link(m.page - 1))\">← Previous page</a>" }
        pager += "<span class=\"muted\" data-k=\"page\">Page \(m.page)</span>"
        if m.hasNextPage { pager += "<a rel=\"next\" data-k=\"next-page\" href=\"\(link(m.page + 1))\">Next page →</a>" }
        body += "<div class=\"pager\">\(pager)</div>"
        return Layout.page(title: "Groups", section: .groups, body: body)
    }
}
