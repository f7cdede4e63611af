import Foundation
import Storage
import APIModel
import ReportModel

/// Debug files reports could not use, most needed first: each with its status, the reports and
/// groups it blocks, each symbol source's last answer, and the command that fixes it.
public enum SymbolsPage {
    public static func render(_ missing: [MissingSymbolSummary], serverURL: String) -> String {
        var body = "<h1>Missing debug files</h1>"
        if missing.isEmpty {
            body += "<p class=\"muted\" data-k=\"no-missing\">Every processed report found its debug files.</p>"
        } else {
            body += "<p>Each row is a build id that processed reports needed and the store still lacks (not found) or "
                + "holds a file of it that cannot be used (unreadable, wrong architecture) or has no line tables (symbol table only). "
                + "Uploading the right file lets reprocessing fix that many reports.</p>"
            body += "<table class=\"symbols\"><thead><tr><th>Build id</th><th>Image</th><th>Status</th>"
                + "<th class=\"num\">Reports it would fix</th><th class=\"num\">Groups</th><th>Last needed</th><th>Symbol sources</th>"
                + "</tr></thead><tbody>"
            for m in missing {
                // Hex digits only: nothing to escape.
                let id = m.file.buildID.hex
                let status = "<span class=\"status \(m.file.status.rawValue)\" data-k=\"missing-status:\(id)\">\(m.file.status.rawValue)</span>"
                    + (m.file.detail.map { "<div class=\"muted\" data-k=\"missing-detail:\(id)\">\(HTML.escape($0))</div>" } ?? "")
                let sources = (m.sources ?? []).enumerated().map { n, a in
                    "<li data-k=\"missing-source:\(id):\(n)\">\(HTML.escape(a.source)): \(HTML.escape(a.outcome.rawValue)) "
                        + "(\(HTML.escape(a.detail)), \(WebDate.text(a.answeredAt)))</li>"
                }
                body += "<tr data-k=\"missing:\(id)\"><td class=\"mono\">\(id)</td><td>\(HTML.escape(m.file.imageName ?? ""))</td>"
                    + "<td>\(status)</td>"
                    + "<td class=\"num\" data-k=\"missing-count:\(id)\">\(m.reportCount)</td>"
                    + "<td class=\"num\" data-k=\"missing-groups:\(id)\">\(m.groupCount)</td><td>\(WebDate.text(m.lastSeen))</td>"
                    + "<td>\(sources.isEmpty ? "<span class=\"muted\">none asked</span>" : "<ul class=\"sources\">\(sources.joined())</ul>")</td></tr>"
            }
            body += "</tbody></table>"
            body += "<pre class=\"command\">" + HTML.escape(ReportView.uploadCommand(serverURL: serverURL)) + "</pre>"
            if missing.contains(where: { $0.file.status == .unreadable || $0.file.status == .wrongArchitecture }) {
                body += "<p>A stored file that cannot be used is kept until it is removed: run "
                    + "<code>stackline symbols rm BUILD-ID</code> on the server, then upload the right file.</p>"
            }
        }
        return Layout.page(title: "Symbols", section: .symbols, body: body)
    }
}

/// Connected remote workers: slots, busy slots, affinity hits (what `GET /api/v1/workers` lists).
public enum WorkersPage {
    public static func render(_ workers: WorkersJSON, localSlots: Int?) -> String {
        var body = "<h1>Workers</h1>"
        if let localSlots { body += "<p data-k=\"local-workers\">This server runs \(localSlots) local worker slot\(localSlots == 1 ? "" : "s").</p>" }
        if workers.workers.isEmpty {
            body += "<p class=\"muted\" data-k=\"no-workers\">No remote worker is connected.</p>"
        } else {
            body += "<table class=\"workers\"><thead><tr><th>Name</th><th>Address</th><th class=\"num\">Busy / slots</th>"
                + "<th class=\"num\">Jobs done</th><th class=\"num\">Affinity hits</th><th class=\"num\">Debug files held</th>"
                + "<th>Last heartbeat</th></tr></thead><tbody>"
            for w in workers.workers {
                let id = HTML.escape(w.id)
                let hitRate = w.affinityClaims > 0 ? " <span class=\"muted\">of \(w.affinityClaims)</span>" : ""
                body += "<tr data-k=\"worker:\(id)\"><td data-k=\"worker-name:\(id)\">\(HTML.escape(w.name))</td><td class=\"mono\">\(HTML.escape(w.address ?? ""))</td>"
                    + "<td class=\"num\" data-k=\"worker-busy:\(id)\">\(w.busy) / \(w.slots)</td><td class=\"num\">\(w.jobsDone)</td>"
                    + "<td class=\"num\">\(w.affinityHits)\(hitRate)</td><td class=\"num\">\(w.holds)</td>"
                    + "<td>\(WebDate.text(w.lastHeartbeat))</td></tr>"
            }
            body += "</tbody></table>"
        }
        return Layout.page(title: "Workers", section: .workers, body: body)
    }
}
