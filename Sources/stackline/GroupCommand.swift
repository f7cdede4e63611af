import ArgumentParser
import Foundation
import Storage
import APIModel
import JSONFormat
import Presentation
import ReportModel
import ReportRendering

/// `stackline group FINGERPRINT`: one group in full.
struct GroupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group",
        abstract: "Show one group: title, counts per version, first and last seen, its stack and latest reports.")

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "The fingerprint, or a unique prefix of it, as `groups` prints it.")
    var fingerprint: String

    @Flag(help: "Machine-readable output.")
    var json = false

    func run() throws {
        let db = try database.open(for: "group")
        let detail: GroupDetail
        do {
            guard let found = try db.group(fingerprint: fingerprint) else {
                throw fail("stackline group: no group with fingerprint \(fingerprint)")
            }
            detail = found
        } catch let error as GroupQueryError {
            throw fail("stackline group: \(error.description)")
        }
        let g = detail.summary
        let representative = try g.representativeReportId.flatMap { try db.result(reportId: $0) }
            .map { try JSONDecoder().decode(SymbolicatedReport.self, from: $0.symbolicatedJSON) }
        if json {
            print(try encodeJSON(GroupDetailJSON(detail, representative: representative)))
            return
        }
        // Titles, app names, versions and frames come from reports: every line is escaped.
        printLine(g.title)
        printLine("Fingerprint: \(g.fingerprint)  (\(g.kind), grouping rules v\(g.rulesVersion))")
        if let app = g.app { printLine("App: \(app)") }
        printLine("Reports: \(g.count)  first seen \(g.firstSeen.rfc3339)  last seen \(g.lastSeen.rfc3339)")
        print("By version:")
        for (version, count) in g.versions.sorted(by: { ($0.value, $1.key) > ($1.value, $0.key) }) {
            printLine("  \(pad(version.isEmpty ? "(none)" : version, 20))\(count)")
        }
        print("Grouped by:")
        for frame in g.frames { printLine("  \(frame)") }
        print("Latest report ids: \(detail.latestReportIds.map(String.init).joined(separator: ", "))")
        if let representative, let id = g.representativeReportId {
            print("")
            print("Representative report \(id):")
            print(TextReportRenderer.render(representative))
        }
    }
}
