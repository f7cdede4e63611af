import Foundation
import GRDB

extension Schema {
    /// "v13: sessions": the SDK's launches (`appBoot` records) as counters, and who each SDK
    /// report came from (issue 32, release health).
    ///
    /// - `session_counters`: one row per namespace, app, version, UTC day, OS version and device
    ///   model: the launches counted and a HyperLogLog sketch of their distinct users
    ///   (`HyperLogLog.encoded`, at most 16 KiB). The storage grows with the days and the
    ///   combinations seen, never with the launches.
    /// - `session_record_ids`: the `report_id`s of recent launches, so an SDK that sends a batch
    ///   again (it did not see the answer) is answered `duplicate` and counted once; pruned
    ///   after `SessionCounters.duplicateWindow`, so it holds at most two days of launches.
    /// - `report_sessions`: the session, user and device of each report an SDK record became,
    ///   and the app and version its SDK ran; crashed sessions and crashed users are counted
    ///   exactly from here. Filled for the SDK reports already stored from their kept meta.
    static func registerSessions(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v13: sessions") { db in
            try db.execute(
                sql: """
                    CREATE TABLE session_counters (
                        namespace TEXT NOT NULL,
                        app TEXT NOT NULL,
                        version TEXT NOT NULL,
                        day INTEGER NOT NULL,           -- UTC days since 1970-01-01 of the launch (SessionCounters.countedTime)
                        os_version TEXT NOT NULL,       -- '' when the launch did not say
                        device_model TEXT NOT NULL,     -- '' when the launch did not say
                        sessions INTEGER NOT NULL,
                        users BLOB NOT NULL,            -- HyperLogLog sketch of the distinct users
                        first_seen INTEGER NOT NULL,    -- earliest created_time counted, ms
                        last_seen INTEGER NOT NULL,     -- latest created_time counted, ms
                        UNIQUE (namespace, app, version, day, os_version, device_model)
                    );
                    CREATE INDEX session_counters_release ON session_counters (app, version, day);
                    CREATE TABLE session_record_ids (
                        namespace TEXT NOT NULL,
                        sdk_report_id TEXT NOT NULL,
                        received_at INTEGER NOT NULL,
                        PRIMARY KEY (namespace, sdk_report_id)
                    ) WITHOUT ROWID;
                    CREATE INDEX session_record_ids_age ON session_record_ids (received_at);
                    CREATE TABLE report_sessions (
                        report_id INTEGER PRIMARY KEY REFERENCES reports(id) ON DELETE CASCADE,
                        app TEXT,                       -- the SDK's app_name
                        version TEXT,                   -- the SDK's app_version
                        session_id TEXT,
                        user_key TEXT,                  -- SessionIdentity.userKey: 'u:' user_id, else 'd:' device_id
                        user_id TEXT,
                        device_id TEXT,
                        created_time INTEGER NOT NULL   -- the record's created_time (SessionCounters.countedTime), ms
                    );
                    """)
            // Reports stored before v13 from SDK records: their meta was kept, so they count too.
            // The insert is this migration's own: `insertReportSession` writes columns that later
            // migrations add ("v14: report context" fills those for these rows).
            let rows = try Row.fetchCursor(
                db, sql: "SELECT report_id, meta, MIN(created_time) AS created_time, MIN(received_at) AS received_at FROM sdk_records GROUP BY report_id")
            while let row = try rows.next() {
                let meta: String = row["meta"]
                guard let identity = SessionIdentity(metaJSON: Data(meta.utf8)) else { continue }
                try db.cachedStatement(
                    sql: """
                        INSERT OR IGNORE INTO report_sessions (report_id, app, version, session_id, user_key, user_id, device_id, created_time)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [
                    row["report_id"] as Int64, identity.app, identity.version, identity.sessionId, identity.userKey, identity.userId,
                    identity.deviceId,
                    SessionCounters.countedTime(created: row["created_time"], received: row["received_at"]),
                ])
            }
        }
    }
}
