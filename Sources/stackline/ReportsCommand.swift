import ArgumentParser
import Foundation
import APIModel
import JSONFormat
import Presentation
import ReportQuery
import Storage

/// `stackline reports --where EXPR`: the reports a search matches, newest first, a page at a time.
struct ReportsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reports",
        abstract: "Search reports by app, version, OS, device, kind, group, time and SDK meta keys.",
        discussion: """
            EXPR is terms separated by spaces, all of which must hold: field op value, e.g. \
            'os_version=17.2 device_model~iPhone15 version>=3.4 meta.channel=appstore time>7d'. \
            Fields: \(Field.names.joined(separator: ", ")); operators = != ~ (contains) !~ > >= < <=. \
            Quote a value with spaces: app="My App". See docs/search.md.
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(name: .customLong("where"), help: "The search expression (default: every report).")
    var expression = ""

    @Option(help: "At most this many reports (1 to 1000).")
    var limit = SearchLimits.defaultPageSize

    @Option(help: "Continue after this cursor (the previous page's nextCursor).")
    var cursor: Int64?

    @Flag(help: "Machine-readable output.")
    var json = false

    func validate() throws {
        guard SearchLimits.pageSizes.contains(limit) else { throw ValidationError("--limit must be in 1...1000") }
        if let cursor, cursor <= 0 { throw ValidationError("--cursor must be positive") }
    }

    func run() throws {
        let query = try parseWhere(expression, command: "reports")
        let db = try database.open(for: "reports")
        let page = ReportSearchJSON(try db.searchReports(query, limit: limit, after: cursor))
        if json {
            print(try encodeJSON(page))
            return
        }
        if page.reports.isEmpty {
            print("no reports")
            return
        }
        var table = Table("ID", "RECEIVED", "KIND", "APP", "VERSION", "OS", "MODEL", "GROUP", "TITLE")
        for r in page.reports {
            table.add(
                String(r.id), r.received.rfc3339, r.kind.rawValue, r.app ?? "-", r.version ?? "-", r.osVersion ?? "-", r.deviceModel ?? "-",
                r.fingerprint.map { String($0.prefix(16)) } ?? "-", r.title ?? "-")
        }
        print(table.render())
        if let next = page.nextCursor { print("more: --cursor \(next)") }
    }
}

/// `--where` parsed, or the parser's message on stderr and exit status 2 (a usage error).
func parseWhere(_ expression: String, command: String) throws -> ReportQuery {
    do {
        return try ReportQuery.parse(expression)
    } catch {
        throw fail("stackline \(command): \(error.description)", code: 2)
    }
}
