import GRDB

extension Schema {
    /// "v6: namespaces": the SDK's namespaces, their keys and remote configurations, the
    /// namespace each report was uploaded into, and the SDK's own record ids for dedupe.
    static func registerNamespaces(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v6: namespaces") { db in
            try db.execute(
                sql: """
                    -- NULL for reports that came without one (`submit`, POST /api/v1/reports without a namespaced token).
                    ALTER TABLE reports ADD COLUMN namespace TEXT;
                    CREATE INDEX reports_namespace ON reports (namespace) WHERE namespace IS NOT NULL;
                    CREATE TABLE namespaces (
                        name TEXT PRIMARY KEY,
                        -- The AES-CBC key SDK payloads are encrypted with (16, 24 or 32 bytes). Kept
                        -- in clear: the server must decrypt with it. NULL: payloads arrive unencrypted.
                        aes_key BLOB CHECK (aes_key IS NULL OR length(aes_key) IN (16, 24, 32)),
                        configuration TEXT,             -- the SDK's remote configuration, validated JSON; NULL: defaults
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL
                    );
                    -- One row per report an SDK record became: `report_id` is unique per namespace
                    -- in the SDK, so a record sent again is answered "duplicate" from here.
                    CREATE TABLE sdk_records (
                        namespace TEXT NOT NULL,
                        sdk_report_id TEXT NOT NULL,
                        report_id INTEGER NOT NULL REFERENCES reports(id) ON DELETE CASCADE,
                        monitor_type TEXT NOT NULL,
                        created_time INTEGER NOT NULL,  -- the SDK's created_time, ms since the epoch
                        meta TEXT NOT NULL,             -- the record's meta object, JSON
                        received_at INTEGER NOT NULL,
                        PRIMARY KEY (namespace, sdk_report_id, report_id)
                    );
                    CREATE INDEX sdk_records_report ON sdk_records (report_id);
                    """)
        }
    }
}
