import Foundation
import Hashing
import SQLInterface

/// One app version's counts, from the session counters and the reports (`stackline releases`).
/// Rates are not computed here: `ReleaseHealthJSON` derives them, and only where there are
/// sessions to divide by.
public struct ReleaseCounts: Sendable, Equatable {
    public var app: String
    public var version: String
    /// Launches counted (`appBoot` records).
    public var sessions = 0
    /// Distinct users of those launches, estimated (HyperLogLog: exact up to 2,048 users, then a relative error under 0.02).
    public var users = 0
    /// Distinct session ids among the version's crash reports: exact.
    public var crashedSessions = 0
    /// Distinct users among the version's crash reports: exact.
    public var crashedUsers = 0
    public var crashes = 0
    public var hangs = 0
    /// Earliest and latest launch or report, ms.
    public var firstSeen: Int64?
    public var lastSeen: Int64?
    /// The app's last day with launches (UTC days since 1970), and this version's share of
    /// that day's launches; nil when the version has no launches at all.
    public var adoptionDay: Int64?
    public var adoption: Double?
    /// Per UTC day, oldest first.
    public var days: [Day] = []

    public struct Day: Sendable, Equatable {
        /// UTC days since 1970-01-01.
        public var day: Int64
        public var sessions = 0
        public var users = 0
        public var crashedSessions = 0
        public var crashes = 0
        public var hangs = 0
    }

    public init(app: String, version: String) {
        self.app = app
        self.version = version
    }

    mutating func seen(_ first: Int64, _ last: Int64) {
        firstSeen = min(firstSeen ?? first, first)
        lastSeen = max(lastSeen ?? last, last)
    }
}

extension SQLStore {
    /// Release health per app and version, newest release first. `app` and `namespace` narrow
    /// it (both are bound as arguments).
    ///
    /// A report counts for the app and version its SDK meta named (the ones its launches were
    /// counted under), else for its own; reports with no app are left out. Users are merged
    /// across days, OS versions and models by register maximum, so a user seen on three days is
    /// one user of the version.
    public func releaseHealth(app: String? = nil, namespace: String? = nil) throws -> [ReleaseCounts] {
        try read { db in try ReleaseHealth.releases(db, app: app, namespace: namespace) }
    }

    /// One version of `app`, as `releaseHealth(app:)` counts it (adoption included); nil when
    /// the version has neither launches nor reports.
    public func releaseHealth(app: String, version: String, namespace: String? = nil) throws -> ReleaseCounts? {
        try read { db in
            try ReleaseHealth.releases(db, app: app, version: version, namespace: namespace).first { $0.version == version }
        }
    }
}

/// Release health's reads, inside a transaction the caller holds.
enum ReleaseHealth {

    /// The same, inside a read the caller holds (the alert rules' snapshot). `version` narrows
    /// it to one version of `app` (the velocity and release-health rules ask for one at a time):
    /// only that version's counters and reports are read, and the app's last day for adoption
    /// is summed without reading any other version's user sketches.
    static func releases(_ db: SQLExecutor, app: String?, version: String? = nil, namespace: String?) throws -> [ReleaseCounts] {
        var releases: [ReleaseKey: ReleaseCounts] = [:]
        var days: [ReleaseKey: [Int64: ReleaseCounts.Day]] = [:]
        // The app's launches per day, for adoption.
        var appDays: [String: [Int64: Int]] = [:]

        var counterConditions: [String] = []
        var counterArguments: [SQLValue] = []
        if let app {
            counterConditions.append("app = ?")
            counterArguments.append(app.sqlValue)
        }
        if let namespace {
            counterConditions.append("namespace = ?")
            counterArguments.append(namespace.sqlValue)
        }
        if let app, version != nil {
            // Adoption's denominator: every version's launches on the app's last day.
            let appConditions = counterConditions.joined(separator: " AND ")
            if let row = try db.row(
                """
                SELECT day, SUM(sessions) AS n FROM session_counters
                WHERE \(appConditions) AND day = (SELECT MAX(day) FROM session_counters WHERE \(appConditions))
                GROUP BY day
                """,
                counterArguments + counterArguments),
                let day = try row.optionalInt64(0)
            {
                appDays[app] = [day: try row.int(1)]
            }
            counterConditions.append("version = ?")
            counterArguments.append(version.sqlValue)
        }
        let counterWhere = counterConditions.isEmpty ? "" : "WHERE " + counterConditions.joined(separator: " AND ")
        // In release and day order, so one version's sketch and one day's are merged at a time.
        let sql = """
            SELECT app, version, day, sessions, users, first_seen, last_seen FROM session_counters
            \(counterWhere) ORDER BY app, version, day
            """
        var current: (key: ReleaseKey, users: HyperLogLog, day: Int64, dayUsers: HyperLogLog)?
        func finishDay() {
            guard let c = current else { return }
            days[c.key, default: [:]][c.day, default: .init(day: c.day)].users = c.dayUsers.estimate
        }
        func finishRelease() {
            guard let c = current else { return }
            finishDay()
            releases[c.key]?.users = c.users.estimate
        }
        try db.scan(sql, counterArguments) { row in
            let key = ReleaseKey(app: try row.string(0), version: try row.string(1))
            let day = try row.int64(2)
            let sessions = try row.int(3)
            let sketch = try HyperLogLog(encoded: try row.data(4))
            if current?.key != key {
                finishRelease()
                current = (key, HyperLogLog(), day, HyperLogLog())
                releases[key] = ReleaseCounts(app: key.app, version: key.version)
            } else if current?.day != day {
                finishDay()
                current?.day = day
                current?.dayUsers = HyperLogLog()
            }
            current?.users.merge(sketch)
            current?.dayUsers.merge(sketch)
            releases[key]!.sessions += sessions
            releases[key]!.seen(try row.int64(5), try row.int64(6))
            days[key, default: [:]][day, default: .init(day: day)].sessions += sessions
            if version == nil { appDays[key.app, default: [:]][day, default: 0] += sessions }
            return true
        }
        finishRelease()

        try addReports(db, app: app, version: app == nil ? nil : version, namespace: namespace, releases: &releases, days: &days)

        for (key, var release) in releases {
            release.days = (days[key] ?? [:]).values.sorted { $0.day < $1.day }
            if release.sessions > 0, let perDay = appDays[key.app], let last = perDay.keys.max(), let total = perDay[last], total > 0 {
                release.adoptionDay = last
                release.adoption = Double(days[key]?[last]?.sessions ?? 0) / Double(total)
            }
            releases[key] = release
        }
        return releases.values.sorted {
            ($0.lastSeen ?? 0, $1.app, $1.version) > ($1.lastSeen ?? 0, $0.app, $0.version)
        }
    }

    /// Adds the reports' counts (exact), per release and per day.
    private static func addReports(
        _ db: SQLExecutor, app: String?, version: String?, namespace: String?, releases: inout [ReleaseKey: ReleaseCounts],
        days: inout [ReleaseKey: [Int64: ReleaseCounts.Day]]
    ) throws {
        var conditions = ["coalesce(s.app, r.app) IS NOT NULL"]
        var arguments: [SQLValue] = []
        if let app {
            conditions.append("coalesce(s.app, r.app) = ?")
            arguments.append(app.sqlValue)
        }
        if let version {
            conditions.append("coalesce(s.version, r.version, '') = ?")
            arguments.append(version.sqlValue)
        }
        if let namespace {
            conditions.append("r.namespace = ?")
            arguments.append(namespace.sqlValue)
        }
        // The launch's day for an SDK report (its created_time), the day it arrived otherwise.
        let at = "coalesce(s.created_time, r.received_at)"
        let counts = """
            SUM(CASE WHEN r.kind = 'crash' THEN 1 ELSE 0 END) AS crashes, SUM(CASE WHEN r.kind = 'lag' THEN 1 ELSE 0 END) AS hangs,
            COUNT(DISTINCT CASE WHEN r.kind = 'crash' THEN s.session_id END) AS crashed_sessions,
            COUNT(DISTINCT CASE WHEN r.kind = 'crash' THEN s.user_key END) AS crashed_users,
            MIN(\(at)) AS first, MAX(\(at)) AS last
            """
        let from = """
            FROM reports r LEFT JOIN report_sessions s ON s.report_id = r.id
            WHERE \(conditions.joined(separator: " AND "))
            """
        let release = "coalesce(s.app, r.app) AS app, coalesce(s.version, r.version, '') AS version"
        for row in try db.rows("SELECT \(release), \(counts) \(from) GROUP BY 1, 2", arguments) {
            let key = ReleaseKey(app: try row.string("app"), version: try row.string("version"))
            var counts = releases[key] ?? ReleaseCounts(app: key.app, version: key.version)
            counts.crashes = try row.int("crashes")
            counts.hangs = try row.int("hangs")
            counts.crashedSessions = try row.int("crashed_sessions")
            counts.crashedUsers = try row.int("crashed_users")
            counts.seen(try row.int64("first"), try row.int64("last"))
            releases[key] = counts
        }
        for row in try db.rows(
            "SELECT \(release), \(at) / \(SessionCounters.dayMs) AS day, \(counts) \(from) GROUP BY 1, 2, 3", arguments)
        {
            let key = ReleaseKey(app: try row.string("app"), version: try row.string("version"))
            let day = try row.int64("day")
            var counts = days[key, default: [:]][day] ?? .init(day: day)
            counts.crashes = try row.int("crashes")
            counts.hangs = try row.int("hangs")
            counts.crashedSessions = try row.int("crashed_sessions")
            days[key, default: [:]][day] = counts
        }
    }
}

/// An app and one of its versions ('' for reports without a version).
struct ReleaseKey: Hashable {
    var app: String
    var version: String
}
