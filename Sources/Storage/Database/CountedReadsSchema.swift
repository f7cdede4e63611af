import Foundation
import GRDB

extension Schema {
    /// "v17: counted reads" (issue 33 §5): what a group's pages show, kept as it changes in the
    /// ledger's transaction instead of counted from the reports on each view (`GroupCounters`).
    ///
    /// - `groups.users`, `groups.sessions`, `group_versions.users`, `group_versions.sessions`:
    ///   distinct users (`ReportIdentitySQL.userKey`) and sessions among a group's reports, whole
    ///   and per app version. A distinct count cannot be kept by adding, so each has a membership
    ///   table, one row per (group, user) etc. with the reports that user has in it: a row that
    ///   appears adds one, a row whose reports reach zero takes one away.
    /// - `group_days`, `group_version_days`: reports per group (and app version) per UTC day of
    ///   arrival: the groups page's trends, and a list filtered by `since` or `version` counted
    ///   from whole days (only the day `since` falls in is counted from its reports).
    /// - `group_facets`: a group's reports per OS version, device model and version (as search
    ///   reads them), the facets its web page shows.
    /// - `results.received_at`: the report's arrival, copied so that a group's members are read
    ///   in arrival order from one index (latest reports, first and last seen, first version)
    ///   instead of sorted from all of them; it replaces the plain fingerprint index.
    ///
    /// Filled from the rows already stored, so an upgraded database is exact; `db check`
    /// compares every one of them with the reports.
    static func registerCountedReads(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v17: counted reads") { db in
            try db.execute(
                sql: """
                    ALTER TABLE groups ADD COLUMN users INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE groups ADD COLUMN sessions INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE group_versions ADD COLUMN users INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE group_versions ADD COLUMN sessions INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE results ADD COLUMN received_at INTEGER;
                    UPDATE results SET received_at = (SELECT r.received_at FROM reports r WHERE r.id = results.report_id);
                    DROP INDEX IF EXISTS results_fingerprint;
                    CREATE INDEX results_group_arrival ON results (fingerprint, received_at, report_id);
                    CREATE TABLE group_days (
                        fingerprint TEXT NOT NULL,
                        day INTEGER NOT NULL,           -- received_at / 86,400,000 (UTC days since the epoch)
                        count INTEGER NOT NULL,
                        PRIMARY KEY (fingerprint, day)
                    ) WITHOUT ROWID;
                    CREATE INDEX group_days_by_day ON group_days (day, fingerprint, count);
                    -- The same per app version, keyed for a list filtered by version (and since).
                    CREATE TABLE group_version_days (
                        version TEXT NOT NULL, day INTEGER NOT NULL, fingerprint TEXT NOT NULL, count INTEGER NOT NULL,
                        PRIMARY KEY (version, day, fingerprint)
                    ) WITHOUT ROWID;
                    CREATE INDEX group_version_days_by_group ON group_version_days (fingerprint, version, day);
                    -- A group's reports per value of the facets its page shows (`named` 0: no value).
                    CREATE TABLE group_facets (
                        fingerprint TEXT NOT NULL, facet TEXT NOT NULL, named INTEGER NOT NULL, value TEXT NOT NULL,
                        count INTEGER NOT NULL,
                        PRIMARY KEY (fingerprint, facet, named, value)
                    ) WITHOUT ROWID;
                    CREATE TABLE group_users (
                        fingerprint TEXT NOT NULL, user_key TEXT NOT NULL, reports INTEGER NOT NULL,
                        PRIMARY KEY (fingerprint, user_key)
                    ) WITHOUT ROWID;
                    CREATE TABLE group_sessions (
                        fingerprint TEXT NOT NULL, session_id TEXT NOT NULL, reports INTEGER NOT NULL,
                        PRIMARY KEY (fingerprint, session_id)
                    ) WITHOUT ROWID;
                    CREATE TABLE group_version_users (
                        fingerprint TEXT NOT NULL, version TEXT NOT NULL, user_key TEXT NOT NULL, reports INTEGER NOT NULL,
                        PRIMARY KEY (fingerprint, version, user_key)
                    ) WITHOUT ROWID;
                    CREATE TABLE group_version_sessions (
                        fingerprint TEXT NOT NULL, version TEXT NOT NULL, session_id TEXT NOT NULL, reports INTEGER NOT NULL,
                        PRIMARY KEY (fingerprint, version, session_id)
                    ) WITHOUT ROWID;
                    """)
            // The membership tables and the distinct counts are filled by v22, once they have `last_at`.
            try GroupCounters.rebuildCounts(GRDBExecutor(db), fingerprint: nil)
        }
    }

    /// "v22: members' last reports": each membership row (`group_users` and the other three)
    /// keeps its member's last arrival in the group, indexed, so the distinct users and sessions
    /// of a group since a time are counted from the rows instead of from every report in the
    /// window (a list filtered by `since`, issue 33 §5). Filled from the reports, as v17 filled
    /// the counts.
    static func registerMemberLastReports(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v22: members' last reports") { db in
            try db.execute(sql: memberLastReportsSQL)
            try GroupCounters.rebuildMembers(GRDBExecutor(db), fingerprint: nil)
        }
    }

    /// v22's statements, which PostgreSQL's v5 runs too (the column types are spelled alike in
    /// both: SQLite's `INTEGER` is PostgreSQL's 32-bit type, so `BIGINT`).
    static let memberLastReportsSQL = """
        ALTER TABLE group_users ADD COLUMN last_at BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE group_sessions ADD COLUMN last_at BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE group_version_users ADD COLUMN last_at BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE group_version_sessions ADD COLUMN last_at BIGINT NOT NULL DEFAULT 0;
        CREATE INDEX group_users_by_last ON group_users (fingerprint, last_at);
        CREATE INDEX group_sessions_by_last ON group_sessions (fingerprint, last_at);
        CREATE INDEX group_version_users_by_last ON group_version_users (fingerprint, version, last_at);
        CREATE INDEX group_version_sessions_by_last ON group_version_sessions (fingerprint, version, last_at);
        """

    /// "v23: hourly counters": the reports per group (and app version) per hour of arrival, and
    /// the members of each group (and version) per hour of their last report (`GroupCounters`),
    /// so that a list filtered by `since` reads whole days, then the whole hours of the day
    /// `since` falls in, and counts from the reports and the members only what is left of its
    /// hour; it no longer reads a number of rows that grows with the reports in the window
    /// (issue 33 §5). The members of that part of an hour are found from its reports, so the
    /// memberships' `last_at` indexes v22 added go: they were a fifth of the database. A
    /// version's groups are indexed by their reports under it (`group_versions_by_count`), the
    /// order a version's list since a time walks them in.
    /// Filled from the rows already stored, as v17 and v22 were.
    static func registerHourlyCounters(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v23: hourly counters") { db in
            try db.execute(sql: hourlyCountersSQL(text: "TEXT", table: ") WITHOUT ROWID"))
            try GroupCounters.rebuildHours(GRDBExecutor(db), fingerprint: nil)
        }
    }

    /// v23's tables, which PostgreSQL's v6 creates too: `text` is each engine's text column and
    /// `table` ends a table's definition. The reports per hour are keyed by group, as a list
    /// walks the groups that can be on its page, and per version by version, as a version's
    /// list reads all of its groups; the members per hour by group, as a group's row is read.
    static func hourlyCountersSQL(text: String, table: String) -> String {
        """
        CREATE TABLE group_hours (
            fingerprint \(text) NOT NULL,
            hour BIGINT NOT NULL,           -- received_at / 3,600,000 (hours since the epoch)
            count BIGINT NOT NULL,
            PRIMARY KEY (fingerprint, hour)
        \(table);
        CREATE TABLE group_version_hours (
            version \(text) NOT NULL, hour BIGINT NOT NULL, fingerprint \(text) NOT NULL, count BIGINT NOT NULL,
            PRIMARY KEY (version, hour, fingerprint)
        \(table);
        CREATE TABLE group_member_hours (
            fingerprint \(text) NOT NULL,
            hour BIGINT NOT NULL,           -- last_at / 3,600,000 of the members counted
            users BIGINT NOT NULL, sessions BIGINT NOT NULL,
            PRIMARY KEY (fingerprint, hour)
        \(table);
        CREATE TABLE group_version_member_hours (
            fingerprint \(text) NOT NULL, version \(text) NOT NULL, hour BIGINT NOT NULL, users BIGINT NOT NULL, sessions BIGINT NOT NULL,
            PRIMARY KEY (fingerprint, version, hour)
        \(table);
        CREATE INDEX group_versions_by_count ON group_versions (version, count, fingerprint);
        DROP INDEX group_users_by_last;
        DROP INDEX group_sessions_by_last;
        DROP INDEX group_version_users_by_last;
        DROP INDEX group_version_sessions_by_last;
        """
    }
}
