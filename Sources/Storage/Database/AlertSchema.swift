import GRDB

extension Schema {
    /// "v8: alerts": what the alert service of `stackline serve` has seen (a cursor over
    /// `results`), the events its rules raised (once each, by their UNIQUE key, also across
    /// restarts) and one delivery per event and target with its retry state (docs/alerts.md).
    static func registerAlerts(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v8: alerts") { db in
            try db.execute(
                sql: """
                    -- Named positions: 'results' is the rowid of the last result the rules were evaluated on.
                    CREATE TABLE alert_cursors (
                        name TEXT PRIMARY KEY,
                        value INTEGER NOT NULL
                    );
                    CREATE TABLE alert_events (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        rule TEXT NOT NULL,             -- the rule's name in the rules file
                        kind TEXT NOT NULL,             -- new_group | regression | spike | hang_budget
                        fingerprint TEXT NOT NULL,
                        scope TEXT NOT NULL,            -- '' (new group), the app version (regression, hang budget), the hour's start in ms (spike)
                        severity TEXT NOT NULL,
                        payload TEXT NOT NULL,          -- the event as JSON, fixed when it was raised: every attempt sends the same
                        created_at INTEGER NOT NULL,
                        UNIQUE (rule, fingerprint, scope)
                    );
                    CREATE TABLE alert_deliveries (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        event_id INTEGER NOT NULL REFERENCES alert_events(id) ON DELETE CASCADE,
                        target TEXT NOT NULL,           -- the target's name in the rules file
                        state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
                        attempts INTEGER NOT NULL DEFAULT 0,
                        next_attempt_at INTEGER NOT NULL,
                        last_error TEXT,                -- never holds a URL, header or password from the rules file
                        updated_at INTEGER NOT NULL,
                        UNIQUE (event_id, target)
                    );
                    CREATE INDEX alert_deliveries_due ON alert_deliveries (next_attempt_at) WHERE state = 'pending';
                    """)
        }
    }
}
