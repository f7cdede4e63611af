import ArgumentParser
import Foundation
import JobQueue
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
            kind: kind, app: app, version: version, since: since.map { $0.milliseconds(now: db.now()) }, limit: limit)
        let groups = try db.groups(filter)
        if json {
            print(try encodeJSON(groups.map(GroupJSON.init)))
            return
        }
        if groups.isEmpty {
            print("no groups")
            return
        }
        var table = Table("COUNT", "KIND", "APP", "FINGERPRINT", "LAST SEEN", "TITLE")
        for g in groups {
            table.add(String(g.count), "\(g.kind)", g.app ?? "-", String(g.fingerprint.prefix(16)), g.lastSeen.rfc3339, g.title)
        }
        print(table.render())
    }
}

/// The `--json` shape of one group (`groups`, `group`, and the `group` of `report --json`).
struct GroupJSON: Encodable {
    var fingerprint: String
    var kind: String
    var title: String
    var count: Int
    var firstSeen: Date
    var lastSeen: Date
    var versions: [String: Int]
    var rulesVersion: Int
    var app: String?

    init(_ g: GroupSummary) {
        fingerprint = g.fingerprint
        kind = g.kind.rawValue
        title = g.title
        count = g.count
        firstSeen = g.firstSeen
        lastSeen = g.lastSeen
        versions = g.versions
        rulesVersion = g.rulesVersion
        app = g.app
    }
}

extension ReportKind: ExpressibleByArgument {}

/// `--since`: a duration back from now (`7d`) or an absolute date.
struct SinceDate: ExpressibleByArgument {
    enum Value {
        case ago(milliseconds: Int64)
        case at(milliseconds: Int64)
    }
    let value: Value

    init?(argument: String) {
        let units: [Character: Int64] = ["s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000]
        if let unit = argument.last.flatMap({ units[$0] }), let n = Int64(argument.dropLast()), n >= 0 {
            // 10^15 days does not fit in milliseconds: refuse it rather than trap.
            let (ms, overflow) = n.multipliedReportingOverflow(by: unit)
            guard !overflow else { return nil }
            value = .ago(milliseconds: ms)
            return
        }
        let day = DateFormatter()
        day.locale = Locale(identifier: "en_US_POSIX")
        day.timeZone = TimeZone(identifier: "UTC")
        day.dateFormat = "yyyy-MM-dd"
        if let date = ISO8601DateFormatter().date(from: argument) ?? day.date(from: argument) {
            value = .at(milliseconds: Int64(date.timeIntervalSince1970 * 1000))
            return
        }
        return nil
    }

    func milliseconds(now: Int64) -> Int64 {
        switch value {
        case .ago(let ms): now - ms
        case .at(let ms): ms
        }
    }
}
