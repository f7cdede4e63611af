import GRDB

/// What the `serve` nodes sharing one database must agree on (docs/scaling.md).
extension Schema {
    /// "v20: shared web sessions": the web view's session key and sign-outs, kept in the
    /// database so that every `serve` node sharing it accepts the cookies the others issue and
    /// refuses the ones signed out on any of them (`WebSession`, docs/web.md).
    static func registerSharedWebSessions(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v20: shared web sessions") { db in
            try db.execute(
                sql: """
                    CREATE TABLE web_session_keys (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        key BLOB NOT NULL,
                        created_at INTEGER NOT NULL
                    );
                    CREATE TABLE web_sign_outs (
                        token_id INTEGER PRIMARY KEY,
                        ended_at INTEGER NOT NULL
                    );
                    """)
        }
    }

    /// "v21: singletons": which node does the work one node at a time does (`Singleton`).
    static func registerSingletons(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v21: singletons") { db in
            try db.execute(
                sql: """
                    CREATE TABLE singletons (
                        name TEXT PRIMARY KEY,
                        holder TEXT NOT NULL,
                        expires_at INTEGER NOT NULL
                    );
                    """)
        }
    }
}
