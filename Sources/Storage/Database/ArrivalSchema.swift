import GRDB

extension Schema {
    /// "v18: arrivals during a job": a debug file stored while a job runs is recorded against
    /// that job (`arrivals_during_job`), since the worker may have looked for it before it was
    /// stored. An add requeues only reports with no job queued or running, so without this a
    /// report whose job was running when its file arrived kept the file's image unresolved
    /// until the next add. The completion reads the rows of its own job: when a build id its
    /// result lists as missing arrived meanwhile, it queues the report again in the same
    /// transaction (`SQLJobQueue.requeueIfArrived`).
    static func registerArrivalsDuringJob(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v18: arrivals during a job") { db in
            try db.execute(
                sql: """
                    CREATE TABLE arrivals_during_job (
                        job_id INTEGER NOT NULL,
                        build_id TEXT NOT NULL,
                        PRIMARY KEY (job_id, build_id)
                    ) WITHOUT ROWID;
                    """)
        }
    }

    /// "v19: missing symbols in order": `missing_symbols.position`, the image's place among the
    /// result's missing debug files, so a result lists them in its order on a backend without
    /// SQLite's insertion-ordered `rowid` (PostgreSQL). SQLite still reads them by `rowid`; the
    /// column is written on both so that `db copy` carries the order over.
    static func registerMissingSymbolPosition(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v19: missing symbols in order") { db in
            try db.execute(sql: "ALTER TABLE missing_symbols ADD COLUMN position INTEGER")
        }
    }
}
