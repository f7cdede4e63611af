import Foundation
import GRDB

extension Schema {
    /// "v15: triage" (issue 32 §3): what a team has done about each group.
    ///
    /// - `group_states`: one row per group that was ever resolved, ignored or assigned; a group
    ///   without a row is open. Keyed by fingerprint without a foreign key, so a resolution
    ///   outlives its group when retention empties it, and a crash that comes back later in a
    ///   newer version is still a regression.
    /// - `group_history`: every change, by whom (a token's name, `cli:USER`, or `stackline` for
    ///   what the ledger did by itself), when, with an optional note; comments are entries too.
    ///   `report_id` names the report that reopened or woke a group, so an alert about it is
    ///   decided from the database, as every alert is.
    /// - `group_merges`: a group merged by hand into another, with what its own row held, so an
    ///   unmerge can give it back. `results.own_fingerprint` is the worker's fingerprint of a
    ///   report that a merge filed under another group (NULL when it is filed under its own).
    /// - The tokens table learns the `triage` scope: SQLite cannot change a CHECK in place, so
    ///   the table is rebuilt with its rows.
    static func registerTriage(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v15: triage") { db in
            try db.execute(
                sql: """
                    CREATE TABLE group_states (
                        fingerprint TEXT PRIMARY KEY,
                        state TEXT NOT NULL CHECK (state IN ('open', 'resolved', 'ignored')),
                        resolution TEXT CHECK (resolution IN ('now', 'nextVersion', 'version')),
                        -- Resolved: a later report in this version or after it ('nextVersion': after it only)
                        -- reopens the group; NULL: any later report does.
                        resolved_version TEXT,
                        ignore_until INTEGER,           -- ignored: wakes at this time, ms
                        ignore_reports INTEGER,         -- ignored: wakes after this many more reports
                        ignore_users INTEGER,           -- ignored: wakes after this many more distinct users
                        ignore_reports_seen INTEGER NOT NULL DEFAULT 0,
                        changed_at INTEGER NOT NULL,    -- when the state was last set, ms
                        regressed_version TEXT,         -- the version that reopened a resolved group
                        regressed_at INTEGER,
                        assignee TEXT
                    );
                    CREATE TABLE group_history (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        fingerprint TEXT NOT NULL,
                        at INTEGER NOT NULL,
                        actor TEXT NOT NULL,
                        action TEXT NOT NULL,
                        detail TEXT,                    -- JSON object: what the action said
                        note TEXT,
                        report_id INTEGER               -- the report that reopened or woke the group
                    );
                    CREATE INDEX group_history_group ON group_history (fingerprint, id);
                    CREATE INDEX group_history_report ON group_history (report_id) WHERE report_id IS NOT NULL;
                    CREATE TABLE group_merges (
                        fingerprint TEXT PRIMARY KEY,   -- the merged group's own fingerprint
                        into_fingerprint TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        title TEXT NOT NULL,
                        rules_version INTEGER NOT NULL,
                        frames TEXT NOT NULL,
                        app TEXT,
                        merged_at INTEGER NOT NULL,
                        merged_by TEXT NOT NULL
                    );
                    CREATE INDEX group_merges_into ON group_merges (into_fingerprint);
                    ALTER TABLE results ADD COLUMN own_fingerprint TEXT;
                    CREATE TABLE tokens_v15 (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        name TEXT,
                        scope TEXT NOT NULL CHECK (scope IN ('ingest', 'symbols', 'read', 'triage', 'worker', 'admin')),
                        namespace TEXT,
                        token_hash TEXT NOT NULL UNIQUE,
                        created_at INTEGER NOT NULL,
                        revoked_at INTEGER,
                        last_used_at INTEGER
                    );
                    INSERT INTO tokens_v15 (id, name, scope, namespace, token_hash, created_at, revoked_at, last_used_at)
                        SELECT id, name, scope, namespace, token_hash, created_at, revoked_at, last_used_at FROM tokens;
                    DROP TABLE tokens;
                    ALTER TABLE tokens_v15 RENAME TO tokens;
                    """)
        }
    }
}
