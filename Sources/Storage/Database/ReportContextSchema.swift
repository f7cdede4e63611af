import Foundation
import GRDB

extension Schema {
    /// "v14: report context": the OS version and device model each SDK report's meta named, beside
    /// its session in `report_sessions`, so a search or a facet reads them as columns (issue 32 §2,
    /// §4; docs/search.md). Filled for the SDK reports already stored from their kept meta, under
    /// the same rules as at ingest (strings only, bounded as `SessionIdentity` bounds them).
    static func registerReportContext(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v14: report context") { db in
            try db.execute(
                sql: """
                    ALTER TABLE report_sessions ADD COLUMN os_version TEXT;     -- the SDK meta's os_version
                    ALTER TABLE report_sessions ADD COLUMN device_model TEXT;   -- the SDK meta's device_model
                    CREATE INDEX report_sessions_os_version ON report_sessions (os_version) WHERE os_version IS NOT NULL;
                    CREATE INDEX report_sessions_device_model ON report_sessions (device_model) WHERE device_model IS NOT NULL;
                    """)
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT m.report_id, m.meta FROM sdk_records m JOIN report_sessions rs ON rs.report_id = m.report_id
                    ORDER BY m.report_id, m.rowid
                    """)
            let update = try db.makeStatement(
                sql: "UPDATE report_sessions SET os_version = ?, device_model = ? WHERE report_id = ? AND os_version IS NULL AND device_model IS NULL")
            while let row = try rows.next() {
                let meta: String = row["meta"]
                guard let identity = SessionIdentity(metaJSON: Data(meta.utf8)),
                    identity.osVersion != nil || identity.deviceModel != nil
                else { continue }
                try update.execute(arguments: [identity.osVersion, identity.deviceModel, row["report_id"] as Int64])
            }
        }
    }

    /// "v16: report device": what a report itself says about its device (`RawReport.device`),
    /// for reports without SDK meta (a hand-uploaded `.ips`, `.crash`, KSCrash or MetricKit
    /// file). A search, a facet and a group's users read the SDK meta's value first, then these
    /// (`ReportIdentitySQL`). Reports stored before this migration keep NULL: their raw bytes
    /// would have to be parsed again, which `stackline reprocess` does not do for intake facts.
    static func registerReportDevice(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v16: report device") { db in
            try db.execute(
                sql: """
                    ALTER TABLE reports ADD COLUMN os_version TEXT;     -- the report's own OS version number
                    ALTER TABLE reports ADD COLUMN device_model TEXT;   -- the report's own hardware model
                    ALTER TABLE reports ADD COLUMN device_id TEXT;      -- the report's own per-device key
                    """)
        }
    }
}
