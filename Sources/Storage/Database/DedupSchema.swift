import GRDB

extension Schema {
    /// "v9: duplicates within a namespace": the same bytes uploaded into two namespaces are two
    /// reports. Until v8 `reports.digest` was UNIQUE across the whole database, so a second
    /// tenant's upload was answered with the first tenant's report id (issue 28, F8).
    ///
    /// A column's UNIQUE cannot be dropped in SQLite, so the table is rebuilt (the steps of
    /// "Making Other Kinds Of Table Schema Changes" in SQLite's ALTER TABLE page; GRDB runs a
    /// migration with foreign keys off and checks them before it commits, so the tables that
    /// reference `reports(id)` follow the rename). It copies every stored report once, at the
    /// first start of this version. The AUTOINCREMENT counter is carried over, so an id of a
    /// report deleted before the migration is never given again.
    static func registerDedupWithinNamespace(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v9: duplicates within a namespace") { db in
            let sequence = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'reports'") ?? 0
            try db.execute(
                sql: """
                    CREATE TABLE reports_v9 (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        raw BLOB NOT NULL,              -- zlib-compressed report bytes
                        raw_size INTEGER NOT NULL,      -- decompressed size, caps inflation on read
                        format TEXT NOT NULL,
                        digest TEXT NOT NULL,           -- SHA-256 of the decompressed bytes; unique per namespace
                        app TEXT,
                        version TEXT,
                        kind TEXT NOT NULL CHECK (kind IN ('crash', 'lag')),
                        received_at INTEGER NOT NULL,
                        namespace TEXT,                 -- NULL: uploaded without one
                        build_ids TEXT
                    );
                    INSERT INTO reports_v9 (id, raw, raw_size, format, digest, app, version, kind, received_at, namespace, build_ids)
                        SELECT id, raw, raw_size, format, digest, app, version, kind, received_at, namespace, build_ids FROM reports;
                    DROP TABLE reports;
                    ALTER TABLE reports_v9 RENAME TO reports;
                    CREATE INDEX reports_namespace ON reports (namespace) WHERE namespace IS NOT NULL;
                    -- The deduplication key. '' stands for "no namespace" (no namespace may be
                    -- empty), so reports without one are unique among themselves too: a plain
                    -- (digest, namespace) index would let NULLs repeat.
                    CREATE UNIQUE INDEX reports_digest ON reports (digest, ifnull(namespace, ''));
                    """)
            try db.execute(sql: "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'reports'", arguments: [sequence])
        }
    }
}

extension Schema {
    /// "v10: worker owners": which token first connected each remote worker id (issue 28, F9),
    /// kept in the database so that a master restart does not hand the id to whichever token
    /// reconnects first.
    static func registerWorkerOwners(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v10: worker owners") { db in
            try db.execute(
                sql: """
                    CREATE TABLE worker_owners (
                        worker_id TEXT PRIMARY KEY,
                        token_id INTEGER NOT NULL,      -- tokens.id; a revoked token keeps its ids
                        connected_at INTEGER NOT NULL   -- the owner's last connect, ms
                    );
                    """)
        }
    }
}
