import Foundation
import GRDB
import SQLInterface

/// One table of `stackline db copy`: its rows in the SQLite file and in the copy.
public struct CopiedTable: Sendable, Codable, Equatable {
    public var table: String
    public var source: Int
    public var target: Int
}

/// Why `db copy` stopped.
public enum DatabaseCopyError: Error, CustomStringConvertible, Equatable {
    /// The target already holds reports, and `--replace` was not given.
    case targetNotEmpty(reports: Int)
    /// A table's rows differ after the copy (the transaction was rolled back).
    case countsDiffer(table: String, source: Int, target: Int)

    public var description: String {
        switch self {
        case .targetNotEmpty(let n):
            "the target database already holds \(n) reports; pass --replace to overwrite everything in it"
        case .countsDiffer(let table, let source, let target):
            "\(table): \(source) rows in the file but \(target) in the copy; nothing was kept"
        }
    }
}

extension ServiceDatabase {
    /// The tables of the PostgreSQL schema in the order they are created, so every row a
    /// foreign key points at is copied before the rows that point at it.
    static let copiedTables = [
        "reports", "jobs", "results", "groups", "group_versions", "missing_symbols", "namespaces", "sdk_records", "workers",
        "worker_owners", "alert_cursors", "alert_events", "alert_deliveries", "symbol_source_answers", "session_counters",
        "session_record_ids", "report_sessions", "group_states", "group_history", "group_merges", "tokens", "group_days",
        "group_version_days", "group_facets", "group_users", "group_sessions", "group_version_users", "group_version_sessions",
        "arrivals_during_job", "web_session_keys", "web_sign_outs", "singletons", "group_hours", "group_version_hours",
        "group_member_hours", "group_version_member_hours",
    ]

    /// Rows per INSERT: fewer round trips, and two statement texts per table (a full batch and
    /// the last one), so the prepared statements stay few.
    static let copyBatch = 200

    /// Copies every table of this database into `target` (PostgreSQL): read in one SQLite read
    /// transaction (a snapshot, so a `serve` writing meanwhile is copied as of one commit) and
    /// written in one PostgreSQL transaction, which commits only when every table's row count
    /// is the same on both sides. Ids are kept, and each identity continues after the largest
    /// one copied. A result's position (the alert cursor's order) is its SQLite `rowid`.
    /// `replace` empties the target first; without it a target that holds reports is refused,
    /// so a copy is never made over a running installation by mistake.
    public func copy(to target: PostgresDatabase, replace: Bool) throws -> [CopiedTable] {
        try pool.read { source in
            try target.write { db in
                let existing = try db.int("SELECT COUNT(*) FROM reports") ?? 0
                if existing > 0, !replace { throw DatabaseCopyError.targetNotEmpty(reports: existing) }
                try db.execute("TRUNCATE \(Self.copiedTables.joined(separator: ", ")) RESTART IDENTITY", [])
                var copied: [CopiedTable] = []
                for table in Self.copiedTables {
                    copied.append(try Self.copy(table, from: source, to: db))
                }
                try Self.continueIdentities(db)
                return copied
            }
        }
    }

    private static func copy(_ table: String, from source: Database, to db: SQLExecutor) throws -> CopiedTable {
        let targetColumns = try db.rows(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?", table
        ).map { try $0.string(0) }
        let sourceColumns = try Row.fetchAll(source, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table])
            .map { $0["name"] as String }
        var columns = sourceColumns.filter(targetColumns.contains)
        var selected = columns
        if table == "results", targetColumns.contains("position") {
            columns.append("position")
            selected.append("rowid")
        }
        let sourceCount = try Int.fetchOne(source, sql: "SELECT COUNT(*) FROM \(table)") ?? 0
        if !columns.isEmpty, sourceCount > 0 {
            let row = "(" + sqlPlaceholders(columns.count) + ")"
            func insert(_ rows: Int) -> String {
                "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES "
                    + Array(repeating: row, count: rows).joined(separator: ", ")
            }
            var pending: [SQLValue] = []
            pending.reserveCapacity(columns.count * copyBatch)
            let cursor = try Row.fetchCursor(source, sql: "SELECT \(selected.joined(separator: ", ")) FROM \(table)")
            while let next = try cursor.next() {
                pending += next.databaseValues.map(GRDBExecutor.value)
                if pending.count == columns.count * copyBatch {
                    try db.execute(insert(copyBatch), pending)
                    pending.removeAll(keepingCapacity: true)
                }
            }
            if !pending.isEmpty { try db.execute(insert(pending.count / columns.count), pending) }
        }
        let targetCount = try db.int("SELECT COUNT(*) FROM \(table)") ?? 0
        guard targetCount == sourceCount else { throw DatabaseCopyError.countsDiffer(table: table, source: sourceCount, target: targetCount) }
        return CopiedTable(table: table, source: sourceCount, target: targetCount)
    }

    /// Each identity column's next value after the largest id copied: rows inserted with their
    /// ids do not move the sequence.
    private static func continueIdentities(_ db: SQLExecutor) throws {
        for row in try db.rows(
            """
            SELECT table_name, column_name FROM information_schema.columns
            WHERE table_schema = current_schema() AND is_identity = 'YES' ORDER BY table_name
            """)
        {
            let (table, column) = (try row.string(0), try row.string(1))
            _ = try db.rows(
                "SELECT setval(pg_get_serial_sequence(?, ?), COALESCE(MAX(\(column)), 0) + 1, false) FROM \(table)", table, column)
        }
    }
}
