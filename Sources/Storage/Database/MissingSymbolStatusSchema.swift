import GRDB

extension Schema {
    /// "v12: missing symbol status": `missing_symbols` also lists images whose stored debug file
    /// cannot be used (unreadable, another architecture) or has no line tables (symbol table
    /// only), since adding the right file fixes them as it fixes a file not found, and an add
    /// requeues the reports listed there. Rows from before read as `notFound` without a
    /// detail, which is what they were.
    static func registerMissingSymbolStatus(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v12: missing symbol status") { db in
            try db.execute(
                sql: """
                    ALTER TABLE missing_symbols ADD COLUMN status TEXT NOT NULL DEFAULT 'notFound'
                        CHECK (status IN ('notFound', 'unreadable', 'wrongArchitecture', 'symbolTableOnly'));
                    ALTER TABLE missing_symbols ADD COLUMN detail TEXT;
                    """)
        }
    }
}
