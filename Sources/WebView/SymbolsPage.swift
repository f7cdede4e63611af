import Foundation
import Storage
import APIModel

/// Missing debug files, most needed first, and the upload command that fixes them.
public enum SymbolsPage {
    public static func render(_ missing: [MissingSymbolSummary], serverURL: String) -> String {
        var body = "<h1>Missing debug files</h1>"
        if missing.isEmpty {
            body += "<p class=\"muted\" data-k=\"no-missing\">Every processed report found its debug files.</p>"
        } else {
            body += "<p>Each row is a build id that processed reports needed and the store still lacks. "
                + "Uploading it lets reprocessing fix that many reports.</p>"
            body += "<table class=\"symbols\"><thead><tr><th>Build id</th><th>Image</th><th class=\"num\">Reports it would fix</th>"
                + "<th>Last needed</th></tr></thead><tbody>"
            for m in missing {
                // Hex digits only: nothing to escape.
                let id = m.file.buildID.hex
                body += "<tr data-k=\"missing:\(id)\"><td class=\"mono\">\(id)</td><td>\(HTML.escape(m.file.imageName ?? ""))</td>"
                    + "<td class=\"num\" data-k=\"missing-count:\(id)\">\(m.reportCount)</td><td>\(WebDate.text(m.lastSeen))</td></tr>"
            }
            body += "</tbody></table>"
            body += "<pre class=\"command\">" + HTML.escape(ReportView.uploadCommand(serverURL: serverURL)) + "</pre>"
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
