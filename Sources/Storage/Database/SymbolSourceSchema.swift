import GRDB

extension Schema {
    /// "v11: symbol source answers": the last answer of each upstream symbol source
    /// (`serve --symbol-source`) per build id. One row per id and source, replaced at each ask,
    /// so the table grows with the ids reports lacked, not with the asks; rows of ids no
    /// stored report lacks any more go with retention.
    static func registerSymbolSourceAnswers(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v11: symbol source answers") { db in
            try db.execute(
                sql: """
                    CREATE TABLE symbol_source_answers (
                        build_id TEXT NOT NULL,         -- lowercase hex
                        source TEXT NOT NULL,           -- the source's URL without credentials
                        outcome TEXT NOT NULL CHECK (outcome IN ('found', 'notFound', 'refused', 'failed')),
                        detail TEXT NOT NULL,
                        answered_at INTEGER NOT NULL,
                        PRIMARY KEY (build_id, source)
                    ) WITHOUT ROWID;
                    """)
        }
    }
}
