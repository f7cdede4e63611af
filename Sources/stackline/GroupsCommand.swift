import ArgumentParser
import Foundation
import Storage
import APIModel
import JSONFormat
import Presentation
import ReportModel

/// `stackline groups`: top crash and hang groups, most frequent first.
struct GroupsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "groups", abstract: "List crash and lag groups, most frequent first.")

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Only groups of this kind (default: both).")
    var kind: ReportKind?

    @Option(help: "Only groups of this app.")
    var app: String?

    @Option(help: "Count only reports of this app version.")
    var version: String?

    @Option(help: "Count only reports received since then: 30m, 24h, 7d, 2w, or a date (2026-11-01).")
    var since: SinceDate?

    @Option(help: "Count only reports uploaded into this SDK namespace.")
    var namespace: String?

    @Option(help: "Only groups in this state: open, resolved or ignored.")
    var state: GroupStateName?

    @Option(help: "Order by reports, users, sessions or lastSeen (most first).")
    var sort: GroupSort = .reports

    @Option(help: "At most this many groups.")
    var limit = 20

    @Flag(help: "Machine-readable output.")
    var json = false

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be positive") }
    }

    func run() throws {
        let db = try database.open(for: "groups")
        let filter = GroupFilter(
            kind: kind, app: app, version: version, since: since.map { $0.milliseconds(now: db.now()) }, limit: limit,
            namespace: namespace, state: state, sort: sort)
        let groups = try db.groups(filter)
        if json {
            print(try encodeJSON(groups.map(GroupJSON.init)))
            return
        }
        if groups.isEmpty {
            print("no groups")
            return
        }
        var table = Table("COUNT", "USERS", "KIND", "APP", "FINGERPRINT", "LAST SEEN", "STATE", "TITLE")
        let now = db.now()
        for g in groups {
            table.add(
                String(g.count), String(g.users), "\(g.kind)", g.app ?? "-", String(g.fingerprint.prefix(16)), g.lastSeen.rfc3339,
                GroupStateText.short(g.triage, now: now), g.title)
        }
        print(table.render())
    }
}

extension ReportKind: ExpressibleByArgument {}

extension SinceDate: ExpressibleByArgument {}

extension GroupStateName: ExpressibleByArgument {}

extension GroupSort: ExpressibleByArgument {}
