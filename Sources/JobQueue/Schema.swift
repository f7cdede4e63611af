import GRDB

/// Versioned schema. Never edit a registered migration: add a new one.
enum Schema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: reports, jobs, results") { db in
            // Times are integer milliseconds since the Unix epoch.
            try db.execute(
                sql: """
                    CREATE TABLE reports (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        raw BLOB NOT NULL,              -- zlib-compressed report bytes
                        raw_size INTEGER NOT NULL,      -- decompressed size, caps inflation on read
                        format TEXT NOT NULL,
                        digest TEXT NOT NULL UNIQUE,    -- SHA-256 of the decompressed bytes
                        app TEXT,
                        version TEXT,
                        kind TEXT NOT NULL CHECK (kind IN ('crash', 'lag')),
                        received_at INTEGER NOT NULL
                    );
                    CREATE TABLE jobs (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        report_id INTEGER NOT NULL REFERENCES reports(id) ON DELETE CASCADE,
                        state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
                        priority INTEGER NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        lease_expires_at INTEGER,
                        lease_token INTEGER,
                        run_after INTEGER NOT NULL,
                        last_error TEXT,
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL
                    );
                    CREATE INDEX jobs_claimable ON jobs (priority DESC, id) WHERE state = 'queued';
                    CREATE INDEX jobs_leased ON jobs (lease_expires_at) WHERE state = 'running';
                    CREATE INDEX jobs_report ON jobs (report_id);
                    CREATE TABLE results (
                        report_id INTEGER NOT NULL UNIQUE REFERENCES reports(id) ON DELETE CASCADE,
                        symbolicated TEXT NOT NULL,     -- SymbolicatedReport JSON
                        status TEXT NOT NULL,           -- complete | partial | unsymbolicated
                        missing_build_ids TEXT NOT NULL, -- JSON array
                        fingerprint TEXT,               -- set by grouping (a later issue)
                        completed_at INTEGER NOT NULL
                    );
                    """)
        }
        return migrator
    }
}
