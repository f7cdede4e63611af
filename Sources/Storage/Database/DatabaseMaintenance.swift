import Foundation
import GRDB
import SQLInterface
import ReportQuery
import SystemCalls

/// What `stackline db backup` and `db check` report (docs/backup.md).
public struct DatabaseCounts: Sendable, Equatable, Codable {
    public var reports: Int
    public var results: Int
    public var groups: Int
}

/// `stackline db check`: SQLite's own integrity checks, and the group ledger's invariants
/// (a group's count, versions and first and last seen are its members'). Each problem is one
/// line; the first 20 of each kind are named.
public struct DatabaseCheck: Sendable, Codable {
    public var counts: DatabaseCounts
    public var problems: [String]
    public var isSound: Bool { problems.isEmpty }
}

extension ServiceDatabase {
    /// Problems named per check, at most: a damaged file can have millions.
    static let maxProblemsPerCheck = 20

    /// A consistent copy of the whole database at `destination`, made while `serve` runs and
    /// writes. Copying the file is not one: in WAL mode the newest commits live in `-wal` until
    /// a checkpoint, and a copy taken between the two files' writes is torn. This is SQLite's
    /// online backup, from one read transaction (a WAL reader blocks no writer), into a new
    /// private file beside `destination`, renamed into place when complete. An existing
    /// `destination` is never replaced.
    public func backup(to destination: String) throws -> DatabaseCounts {
        guard !FileManager.default.fileExists(atPath: destination) else { throw StorageError.backupExists(destination) }
        let partial = destination + ".partial"
        try? FileManager.default.removeItem(atPath: partial)
        do throws(SystemCallError) { try PrivateFiles.createFile(partial) } catch { throw StorageError.cannotCreate(partial, error.reason) }
        do {
            let copy = try DatabaseQueue(path: partial)
            try pool.backup(to: copy)
            // The copy is a database of its own: one file, no -wal beside it.
            try copy.writeWithoutTransaction { try $0.execute(sql: "PRAGMA journal_mode = DELETE") }
            let counts = try copy.read(Self.counts)
            try copy.close()
            guard rename(partial, destination) == 0 else { throw StorageError.cannotCreate(destination, SystemCallError.reason(errno: errno)) }
            return counts
        } catch {
            try? FileManager.default.removeItem(atPath: partial)
            throw error
        }
    }

    static func counts(_ db: Database) throws -> DatabaseCounts { try DatabaseChecks.counts(GRDBExecutor(db)) }

    /// Checks the file and the ledger in one read transaction, so a running `serve` neither
    /// waits for it nor shows it half a commit: SQLite's own integrity and foreign-key checks,
    /// then the ledger's (`DatabaseChecks`).
    public func check() throws -> DatabaseCheck {
        try pool.read { db in
            var problems = DatabaseChecks.Problems()
            let integrity = try String.fetchAll(db, sql: "PRAGMA integrity_check")
            if integrity != ["ok"] { problems.list += integrity.prefix(Self.maxProblemsPerCheck).map { "integrity: \($0)" } }
            let executor = GRDBExecutor(db)
            try problems.named(executor, "SELECT \"table\" AS t, rowid AS r, parent AS p FROM pragma_foreign_key_check") { row in
                "foreign key: \(try row.optionalString(0) ?? "?") row \(try row.optionalInt64(1) ?? -1) points to a missing \(try row.optionalString(2) ?? "?") row"
            }
            try DatabaseChecks.ledger(executor, &problems)
            return DatabaseCheck(counts: try DatabaseChecks.counts(executor), problems: problems.list)
        }
    }
}

extension PostgresDatabase {
    /// The ledger's checks (`DatabaseChecks`) in one snapshot; PostgreSQL enforces its foreign
    /// keys and checks its own pages, so those are its own (docs/backup.md).
    public func check() throws -> DatabaseCheck {
        try read { db in
            var problems = DatabaseChecks.Problems()
            try DatabaseChecks.ledger(db, &problems)
            return DatabaseCheck(counts: try DatabaseChecks.counts(db), problems: problems.list)
        }
    }
}

/// The group ledger's invariants, recounted from the reports with plain COUNT and
/// COUNT(DISTINCT), in SQL both engines run: a group's count, versions and first and last seen
/// are its members', and every counter table (`GroupCounters`) equals its recount, both ways.
enum DatabaseChecks {
    /// Problems named per check, at most: a damaged database can have millions.
    static let maxPerCheck = ServiceDatabase.maxProblemsPerCheck

    struct Problems {
        var list: [String] = []

        /// The first `maxPerCheck` rows `sql` returns, each described as one problem.
        mutating func named(_ db: SQLExecutor, _ sql: String, _ describe: (SQLRow) throws -> String) throws {
            let rows = try db.rows(sql + " LIMIT \(DatabaseChecks.maxPerCheck + 1)")
            list += try rows.prefix(DatabaseChecks.maxPerCheck).map(describe)
            if rows.count > DatabaseChecks.maxPerCheck { list.append("… and more of the same kind") }
        }
    }

    static func counts(_ db: SQLExecutor) throws -> DatabaseCounts {
        DatabaseCounts(
            reports: try db.int("SELECT COUNT(*) FROM reports") ?? 0,
            results: try db.int("SELECT COUNT(*) FROM results") ?? 0,
            groups: try db.int("SELECT COUNT(*) FROM groups") ?? 0)
    }

    static func ledger(_ db: SQLExecutor, _ problems: inout Problems) throws {
        // Members as the results say, per group and version: the oracle the ledger must equal.
        let members = """
            SELECT s.fingerprint AS f, COALESCE(r.version, '') AS v, COUNT(*) AS n,
                   MIN(r.received_at) AS first, MAX(r.received_at) AS last
            FROM results s JOIN reports r ON r.id = s.report_id WHERE s.fingerprint IS NOT NULL
            GROUP BY s.fingerprint, COALESCE(r.version, '')
            """
        try problems.named(db, """
            WITH m AS (\(members)), t AS (SELECT f, SUM(n) AS n, MIN(first) AS first, MAX(last) AS last FROM m GROUP BY f)
            SELECT g.fingerprint AS f, g.count AS stored, COALESCE(t.n, 0) AS actual FROM groups g LEFT JOIN t ON t.f = g.fingerprint
            WHERE g.count != COALESCE(t.n, 0)
            """) { row in
            "group \(try row.string(0)): count \(try row.int64(1)) but \(try row.int64(2)) reports filed under it"
        }
        try problems.named(db, """
            WITH m AS (\(members)), t AS (SELECT f, MIN(first) AS first, MAX(last) AS last FROM m GROUP BY f)
            SELECT g.fingerprint AS f FROM groups g JOIN t ON t.f = g.fingerprint
            WHERE g.first_seen != t.first OR g.last_seen != t.last
            """) { row in "group \(try row.string(0)): first or last seen is not its reports'" }
        try problems.named(db, """
            WITH m AS (\(members))
            SELECT m.f AS f, COUNT(*) AS n FROM m WHERE NOT EXISTS (SELECT 1 FROM groups g WHERE g.fingerprint = m.f) GROUP BY m.f
            """) { row in "\(try row.int64(1)) versions of reports filed under \(try row.string(0)), which is no group" }
        try problems.named(db, """
            WITH m AS (\(members))
            SELECT m.f AS f, m.v AS v, m.n AS actual, COALESCE(gv.count, 0) AS stored FROM m
            LEFT JOIN group_versions gv ON gv.fingerprint = m.f AND gv.version = m.v WHERE COALESCE(gv.count, 0) != m.n
            UNION ALL
            SELECT gv.fingerprint, gv.version, 0, gv.count FROM group_versions gv
            WHERE gv.count != 0 AND NOT EXISTS (SELECT 1 FROM m WHERE m.f = gv.fingerprint AND m.v = gv.version)
            """) { row in
            "group \(try row.string(0)) version '\(try row.string(1))': count \(try row.int64(3)) but \(try row.int64(2)) reports"
        }
        try counters(db, &problems)
    }

    /// Holds `GroupCounters` and `results.received_at` to the reports, each counted here afresh
    /// with COUNT and COUNT(DISTINCT) over the members.
    private static func counters(_ db: SQLExecutor, _ problems: inout Problems) throws {
        try problems.named(db, """
            SELECT s.report_id AS id FROM results s JOIN reports r ON r.id = s.report_id
            WHERE s.received_at IS DISTINCT FROM r.received_at
            """) { row in "result of report \(try row.int64(0)): its arrival is not its report's" }
        let members = """
            FROM results s JOIN reports r ON r.id = s.report_id LEFT JOIN report_sessions rs ON rs.report_id = s.report_id
            WHERE s.fingerprint IS NOT NULL
            """
        let user = ReportIdentitySQL.userKey
        // A member's last report in the group: the arrival list filters by `since` count from.
        let last = "MAX(r.received_at)"
        // Each table equals its recount, row for row, both ways.
        // Reports per day and per hour, whole and per version.
        var tables: [(table: String, columns: String, recount: String)] = GroupCounters.Period.all.flatMap { period in
            let at = period.index(ofSQL: "r.received_at")
            return [
                (period.table, "fingerprint, \(period.name), count", "SELECT s.fingerprint, \(at), COUNT(*) \(members) GROUP BY 1, 2"),
                (period.versionTable, "version, \(period.name), fingerprint, count",
                 "SELECT COALESCE(r.version, ''), \(at), s.fingerprint, COUNT(*) \(members) GROUP BY 1, 2, 3"),
            ]
        }
        tables += [
            ("group_users", "fingerprint, user_key, reports, last_at",
             "SELECT s.fingerprint, \(user), COUNT(*), \(last) \(members) AND \(user) IS NOT NULL GROUP BY 1, 2"),
            ("group_sessions", "fingerprint, session_id, reports, last_at",
             "SELECT s.fingerprint, rs.session_id, COUNT(*), \(last) \(members) AND rs.session_id IS NOT NULL GROUP BY 1, 2"),
            ("group_version_users", "fingerprint, version, user_key, reports, last_at",
             "SELECT s.fingerprint, COALESCE(r.version, ''), \(user), COUNT(*), \(last) \(members) AND \(user) IS NOT NULL GROUP BY 1, 2, 3"),
            ("group_version_sessions", "fingerprint, version, session_id, reports, last_at",
             "SELECT s.fingerprint, COALESCE(r.version, ''), rs.session_id, COUNT(*), \(last) \(members) AND rs.session_id IS NOT NULL GROUP BY 1, 2, 3"),
        ]
        // Members per hour of their last report (whole and per version).
        for (table, keys, version) in [("group_member_hours", "f", ""), ("group_version_member_hours", "f, v", "COALESCE(r.version, '') AS v, ")] {
            let scope = version.isEmpty ? "1" : "1, 2"
            let lastHour = "\(GroupCounters.Period.hour.index(ofSQL: last)) AS hour"
            let recount = """
                SELECT \(keys), hour, SUM(u), SUM(se) FROM (
                    SELECT s.fingerprint AS f, \(version)\(lastHour), 1 AS u, 0 AS se \(members) AND \(user) IS NOT NULL GROUP BY \(scope), \(user)
                    UNION ALL
                    SELECT s.fingerprint AS f, \(version)\(lastHour), 0 AS u, 1 AS se \(members) AND rs.session_id IS NOT NULL
                    GROUP BY \(scope), rs.session_id
                ) AS m GROUP BY \(keys), hour
                """
            tables.append((table, version.isEmpty ? "fingerprint, hour, users, sessions" : "fingerprint, version, hour, users, sessions", recount))
        }
        let facets = GroupCounters.facets.map { facet in
            "SELECT s.fingerprint, '\(facet.field.description)', CASE WHEN \(facet.value) IS NOT NULL THEN 1 ELSE 0 END, "
                + "COALESCE(\(facet.value), ''), COUNT(*) \(members) GROUP BY 1, 2, 3, 4"
        }
        tables.append(("group_facets", "fingerprint, facet, named, value, count", facets.joined(separator: " UNION ALL ")))
        for t in tables {
            try problems.named(db, """
                SELECT n FROM (SELECT COUNT(*) AS n FROM (
                    SELECT * FROM (SELECT * FROM (\(t.recount)) AS recount EXCEPT SELECT \(t.columns) FROM \(t.table)) AS missing
                    UNION ALL
                    SELECT * FROM (SELECT \(t.columns) FROM \(t.table) EXCEPT SELECT * FROM (\(t.recount)) AS recount) AS extra
                ) AS differing) AS total WHERE n > 0
                """) { row in "\(t.table): \(try row.int64(0)) rows differ from the reports" }
        }
        try problems.named(db, """
            WITH d AS (SELECT s.fingerprint AS f, COUNT(DISTINCT \(user)) AS u, COUNT(DISTINCT rs.session_id) AS se \(members) GROUP BY 1)
            SELECT g.fingerprint AS f FROM groups g LEFT JOIN d ON d.f = g.fingerprint
            WHERE g.users != COALESCE(d.u, 0) OR g.sessions != COALESCE(d.se, 0)
            """) { row in "group \(try row.string(0)): users or sessions are not its reports'" }
        try problems.named(db, """
            WITH d AS (SELECT s.fingerprint AS f, COALESCE(r.version, '') AS v, COUNT(DISTINCT \(user)) AS u,
                              COUNT(DISTINCT rs.session_id) AS se \(members) GROUP BY 1, 2)
            SELECT gv.fingerprint AS f, gv.version AS v FROM group_versions gv LEFT JOIN d ON d.f = gv.fingerprint AND d.v = gv.version
            WHERE gv.users != COALESCE(d.u, 0) OR gv.sessions != COALESCE(d.se, 0)
            """) { row in "group \(try row.string(0)) version '\(try row.string(1))': users or sessions are not its reports'" }
    }
}
