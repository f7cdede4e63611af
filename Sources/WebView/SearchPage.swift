import Foundation
import APIModel

/// What the search page shows: the expression as typed, the parser's refusal if any, a page of
/// reports, and the facets of everything the expression matched.
public struct SearchPageModel: Sendable {
    public var expression: String
    public var error: String?
    public var results: ReportSearchJSON?
    public var facets: [FacetsJSON]

    public init(expression: String, error: String?, results: ReportSearchJSON?, facets: [FacetsJSON]) {
        self.expression = expression
        self.error = error
        self.results = results
        self.facets = facets
    }
}

/// `/search` (docs/search.md): the search language over every stored report, its matches newest
/// first, and counts by OS version, device model and app version.
public enum SearchPage {
    public static func render(_ m: SearchPageModel) -> String {
        var body = "<h1>Search</h1>"
        body += "<form method=\"get\" action=\"/search\" class=\"filters\"><label>Expression (docs/search.md)"
            + "<input name=\"where\" size=\"60\" value=\"\(HTML.escape(m.expression))\" placeholder=\"os_version=17.2 version>=3.4 meta.channel=appstore\">"
            + "</label><button type=\"submit\">Search</button></form>"
        if let error = m.error {
            return Layout.page(title: "Search", section: .search, body: body + "<p class=\"error\" data-k=\"search-error\">\(HTML.escape(error))</p>")
        }
        body += Facets.render(m.facets)
        guard let results = m.results else { return Layout.page(title: "Search", section: .search, body: body) }
        body += "<h2>Reports</h2>"
        if results.reports.isEmpty {
            body += "<p class=\"muted\" data-k=\"no-results\">No report matches.</p>"
        } else {
            body += "<table class=\"groups\"><thead><tr><th>Report</th><th>Kind</th><th>App</th><th>Version</th><th>OS</th><th>Model</th>"
                + "<th>Group</th><th>Received</th></tr></thead><tbody>"
            for r in results.reports {
                let group = r.fingerprint.map { fp in
                    "<a href=\"/groups/\(HTML.pathSegment(fp))\">\(HTML.escape(r.title ?? String(fp.prefix(16))))</a>"
                } ?? "<span class=\"muted\">not grouped yet</span>"
                body += "<tr data-k=\"result:\(r.id)\"><td><a href=\"/reports/\(r.id)\">#\(r.id)</a></td><td>\(r.kind == .lag ? "hang" : "crash")</td>"
                    + "<td>\(HTML.escape(r.app ?? "–"))</td><td>\(HTML.escape(r.version ?? "–"))</td>"
                    + "<td>\(HTML.escape(r.osVersion ?? "–"))</td><td data-k=\"result-model:\(r.id)\">\(HTML.escape(r.deviceModel ?? "–"))</td>"
                    + "<td class=\"title\">\(group)</td><td class=\"nowrap\">\(WebDate.text(r.received))</td></tr>"
            }
            body += "</tbody></table>"
        }
        if let next = results.nextCursor {
            body += "<p><a data-k=\"next-page\" href=\"/search" + HTML.query([("where", m.expression), ("cursor", next)]) + "\">Older reports</a></p>"
        }
        return Layout.page(title: "Search", section: .search, body: body)
    }
}

/// Facet tables: each key's most frequent values, "(none)" for reports without the attribute,
/// and the rest as "other".
enum Facets {
    static func render(_ facets: [FacetsJSON]) -> String {
        guard !facets.isEmpty else { return "" }
        return "<div class=\"facets\">" + facets.map { f in
            let key = HTML.escape(f.key)
            var rows = f.values.map { v in
                "<tr data-k=\"facet:\(key):\(HTML.escape(v.value ?? ""))\"><td>\(HTML.escape(v.value ?? "(none)"))</td><td class=\"num\">\(v.count)</td></tr>"
            }
            if f.other > 0 { rows.append("<tr data-k=\"facet-other:\(key)\"><td class=\"muted\">other</td><td class=\"num\">\(f.other)</td></tr>") }
            return "<table class=\"facet\"><thead><tr><th>\(key)</th><th class=\"num\">\(f.total)</th></tr></thead><tbody>"
                + rows.joined() + "</tbody></table>"
        }.joined() + "</div>"
    }
}
