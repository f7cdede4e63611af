import Compression
import Foundation
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
        migrator.registerMigration("v2: groups, group versions, missing symbols") { db in
            try db.execute(
                sql: """
                    -- One row per crash fingerprint or lag key. Counts are maintained in the
                    -- transaction that stores each result, so they are exact at every commit.
                    CREATE TABLE groups (
                        fingerprint TEXT PRIMARY KEY,
                        kind TEXT NOT NULL CHECK (kind IN ('crash', 'lag')),
                        title TEXT NOT NULL,
                        rules_version INTEGER NOT NULL,
                        frames TEXT NOT NULL,           -- JSON array of the frame signatures that decided it
                        app TEXT,
                        count INTEGER NOT NULL,
                        first_seen INTEGER NOT NULL,    -- received_at of the oldest member
                        last_seen INTEGER NOT NULL,     -- received_at of the newest member
                        representative_report_id INTEGER
                    );
                    CREATE INDEX groups_by_count ON groups (kind, count DESC);
                    CREATE TABLE group_versions (
                        fingerprint TEXT NOT NULL REFERENCES groups(fingerprint) ON DELETE CASCADE,
                        version TEXT NOT NULL,          -- app version; '' when the report has none
                        count INTEGER NOT NULL,
                        PRIMARY KEY (fingerprint, version)
                    );
                    CREATE INDEX results_fingerprint ON results (fingerprint);
                    -- Which reports lack which debug files: drives `symbols missing` and reprocessing.
                    CREATE TABLE missing_symbols (
                        report_id INTEGER NOT NULL REFERENCES reports(id) ON DELETE CASCADE,
                        build_id TEXT NOT NULL,
                        image_name TEXT,
                        PRIMARY KEY (report_id, build_id)
                    );
                    CREATE INDEX missing_symbols_build_id ON missing_symbols (build_id);
                    INSERT OR IGNORE INTO missing_symbols (report_id, build_id)
                        SELECT results.report_id, json_each.value FROM results, json_each(results.missing_build_ids);
                    """)
        }
        migrator.registerMigration("v3: compressed results") { db in
            // A symbolicated report is ~40x larger as JSON than its compressed raw bytes, so
            // results are stored zlib-compressed, with their size to cap inflation on read.
            // SQLite cannot change a column's type in place: rebuild the table and move the rows.
            try db.execute(
                sql: """
                    CREATE TABLE results_v3 (
                        report_id INTEGER NOT NULL UNIQUE REFERENCES reports(id) ON DELETE CASCADE,
                        symbolicated BLOB NOT NULL,         -- zlib-compressed SymbolicatedReport JSON
                        symbolicated_size INTEGER NOT NULL, -- decompressed size, caps inflation on read
                        status TEXT NOT NULL,               -- complete | partial | unsymbolicated
                        missing_build_ids TEXT NOT NULL,    -- JSON array
                        fingerprint TEXT,
                        completed_at INTEGER NOT NULL
                    )
                    """)
            let insert = try db.makeStatement(
                sql: """
                    INSERT INTO results_v3 (report_id, symbolicated, symbolicated_size, status, missing_build_ids,
                                            fingerprint, completed_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """)
            // A cursor, so a large database is converted one row at a time, not loaded whole.
            let rows = try Row.fetchCursor(
                db, sql: "SELECT report_id, symbolicated, status, missing_build_ids, fingerprint, completed_at FROM results")
            while let row = try rows.next() {
                let json: Data = row["symbolicated"]
                try insert.execute(arguments: [
                    row["report_id"], Zlib.compress(json), json.count, row["status"], row["missing_build_ids"],
                    row["fingerprint"], row["completed_at"],
                ])
            }
            try db.execute(
                sql: """
                    DROP TABLE results;
                    ALTER TABLE results_v3 RENAME TO results;
                    CREATE INDEX results_fingerprint ON results (fingerprint);
                    """)
        }
        migrator.registerMigration("v4: missing debug files only in missing_symbols") { db in
            // `results.missing_build_ids` repeated what `missing_symbols` holds. Every id in the
            // column is copied into the table first (a row already there keeps its image name;
            // a column that is not a JSON array was unreadable and held nothing), then the table
            // is rebuilt without the column, the v3 compressed columns unchanged.
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO missing_symbols (report_id, build_id)
                        SELECT results.report_id, json_each.value
                        FROM results, json_each(results.missing_build_ids)
                        WHERE json_valid(results.missing_build_ids) AND json_type(results.missing_build_ids) = 'array'
                          AND json_each.type = 'text';
                    CREATE TABLE results_v4 (
                        report_id INTEGER NOT NULL UNIQUE REFERENCES reports(id) ON DELETE CASCADE,
                        symbolicated BLOB NOT NULL,         -- zlib-compressed SymbolicatedReport JSON
                        symbolicated_size INTEGER NOT NULL, -- decompressed size, caps inflation on read
                        status TEXT NOT NULL,               -- complete | partial | unsymbolicated
                        fingerprint TEXT,
                        completed_at INTEGER NOT NULL
                    );
                    INSERT INTO results_v4 (report_id, symbolicated, symbolicated_size, status, fingerprint, completed_at)
                        SELECT report_id, symbolicated, symbolicated_size, status, fingerprint, completed_at FROM results;
                    DROP TABLE results;
                    ALTER TABLE results_v4 RENAME TO results;
                    CREATE INDEX results_fingerprint ON results (fingerprint);
                    """)
        }
        migrator.registerMigration("v5: tokens") { db in
            // API tokens for `stackline serve`. Only the SHA-256 of a token is kept: the token
            // itself is printed once by `stackline tokens create` and exists nowhere else.
            try db.execute(
                sql: """
                    CREATE TABLE tokens (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        name TEXT,
                        scope TEXT NOT NULL CHECK (scope IN ('ingest', 'symbols', 'read', 'worker', 'admin')),
                        namespace TEXT,                 -- an ingest token's namespace; reports it uploads carry it
                        token_hash TEXT NOT NULL UNIQUE, -- lowercase hex SHA-256 of the whole token
                        created_at INTEGER NOT NULL,
                        revoked_at INTEGER,
                        last_used_at INTEGER
                    );
                    """)
        }
        registerNamespaces(&migrator)
        migrator.registerMigration("v7: build ids and workers") { db in
            try db.execute(
                sql: """
                    -- Lowercase hex build ids of the images the report's frames fall in, space-separated,
                    -- so a claim can prefer a remote worker that holds their debug files.
                    -- NULL: unknown (stored before v7); '': no frame falls in an image with an id.
                    ALTER TABLE reports ADD COLUMN build_ids TEXT;
                    -- The master's view of its connected remote workers, for `stackline workers`.
                    CREATE TABLE workers (
                        id TEXT PRIMARY KEY,
                        name TEXT NOT NULL,
                        address TEXT,
                        slots INTEGER NOT NULL,
                        busy INTEGER NOT NULL,
                        jobs_done INTEGER NOT NULL,
                        cache_bytes INTEGER NOT NULL,
                        holds INTEGER NOT NULL,         -- how many build ids its debug-file cache holds
                        fetches INTEGER NOT NULL,       -- debug files it fetched from the master since it started
                        affinity_hits INTEGER NOT NULL,
                        affinity_claims INTEGER NOT NULL,
                        connected_at INTEGER NOT NULL,
                        last_heartbeat INTEGER NOT NULL
                    );
                    """)
        }
        registerAlerts(&migrator)
        registerDedupWithinNamespace(&migrator)
        registerWorkerOwners(&migrator)
        registerSymbolSourceAnswers(&migrator)
        registerMissingSymbolStatus(&migrator)
        registerSessions(&migrator)
        registerReportContext(&migrator)
        registerTriage(&migrator)
        registerReportDevice(&migrator)
        registerCountedReads(&migrator)
        registerArrivalsDuringJob(&migrator)
        registerMissingSymbolPosition(&migrator)
        registerSharedWebSessions(&migrator)
        registerSingletons(&migrator)
        registerMemberLastReports(&migrator)
        registerHourlyCounters(&migrator)
        return migrator
    }
}
