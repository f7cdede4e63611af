import Foundation
import APIModel

/// Release health per app and version (`GET /api/v1/releases`, docs/releases.md): crash-free
/// sessions and users, adoption, hangs, and the daily trend. A rate nothing divides is shown as
/// a dash, never as a number.
public enum ReleasesPage {
    public static func render(_ releases: [ReleaseHealthJSON], app: String?) -> String {
        var body = "<h1>Releases</h1>"
        body += "<form method=\"get\" action=\"/releases\" class=\"filters\"><label>App<input name=\"app\" value=\""
            + HTML.escape(app ?? "") + "\"></label><button type=\"submit\">Filter</button></form>"
        guard !releases.isEmpty else {
            return Layout.page(
                title: "Releases", section: .releases,
                body: body + "<p class=\"muted\" data-k=\"no-releases\">No launches or reports yet. Launches come from the SDK's <code>appBoot</code> records.</p>")
        }
        body += "<table class=\"groups\"><thead><tr><th>App</th><th>Version</th><th class=\"num\">Sessions</th>"
            + "<th class=\"num\">Crash-free sessions</th><th class=\"num\">Users</th><th class=\"num\">Crash-free users</th>"
            + "<th class=\"num\">Adoption</th><th class=\"num\">Crashes</th><th class=\"num\">Hangs / 1,000 sessions</th>"
            + "<th>Sessions per day</th><th>Last seen</th></tr></thead><tbody>"
        for r in releases {
            let key = HTML.escape(r.app) + ":" + HTML.escape(r.version)
            body += "<tr data-k=\"release:\(key)\">"
                + "<td>\(HTML.escape(r.app))</td><td data-k=\"release-version:\(key)\">\(HTML.escape(r.version.isEmpty ? "(none)" : r.version))</td>"
                + "<td class=\"num\" data-k=\"release-sessions:\(key)\">\(r.sessions)</td>"
                + "<td class=\"num\" data-k=\"release-crash-free-sessions:\(key)\">\(percent(r.crashFreeSessions))</td>"
                + "<td class=\"num\" data-k=\"release-users:\(key)\">\(r.users)</td>"
                + "<td class=\"num\" data-k=\"release-crash-free-users:\(key)\">\(percent(r.crashFreeUsers))</td>"
                + "<td class=\"num\" data-k=\"release-adoption:\(key)\">\(percent(r.adoption))</td>"
                + "<td class=\"num\" data-k=\"release-crashes:\(key)\">\(r.crashes)</td>"
                + "<td class=\"num\">\(r.hangsPer1000Sessions.map { String(format: "%.1f", $0) } ?? "–")</td>"
                + "<td>\(Charts.trend(r.trend.map(\.sessions)))</td>"
                + "<td class=\"nowrap\">\(r.lastSeen.map(WebDate.text) ?? "–")</td></tr>"
        }
        body += "</tbody></table>"
        return Layout.page(title: "Releases", section: .releases, body: body)
    }

    /// A fraction as a percentage with two decimals; a dash where there is nothing to divide.
    static func percent(_ fraction: Double?) -> String {
        guard let fraction, fraction.isFinite else { return "–" }
        return String(format: "%.2f%%", fraction * 100)
    }
}
