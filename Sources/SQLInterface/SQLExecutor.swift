/// Which engine a statement runs on, for the few statements whose text differs between them
/// (most are written in the subset both accept: `?` placeholders, `ON CONFLICT`, `RETURNING`).
public enum SQLDialect: Sendable {
    case sqlite
    case postgres
}

/// One connection inside one transaction, as the backend-independent store code sees it. The
/// SQLite backend adapts GRDB's `Database`; the PostgreSQL backend a libpq connection.
///
/// Statements are written with `?` placeholders; a backend whose engine numbers them (`$1`)
/// rewrites them once per statement text and keeps the prepared statement for the connection's
/// life, so the text must be one of a fixed set (never a value spliced into SQL).
public protocol SQLExecutor: AnyObject {
    var dialect: SQLDialect { get }

    /// Runs one statement; returns the number of rows it changed.
    @discardableResult
    func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int

    /// Runs one statement and returns its rows (a `RETURNING` clause's too).
    func rows(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow]
}

extension SQLExecutor {
    @discardableResult
    public func execute(_ sql: String, _ arguments: SQLBindable...) throws -> Int {
        try execute(sql, arguments.map(\.sqlValue))
    }

    public func rows(_ sql: String, _ arguments: SQLBindable...) throws -> [SQLRow] {
        try rows(sql, arguments.map(\.sqlValue))
    }

    /// The first row, or nil.
    public func row(_ sql: String, _ arguments: [SQLValue]) throws -> SQLRow? {
        try rows(sql, arguments).first
    }

    public func row(_ sql: String, _ arguments: SQLBindable...) throws -> SQLRow? {
        try rows(sql, arguments.map(\.sqlValue)).first
    }
}

/// `?, ?, ?` for an `IN (…)` list of `count` values (at least one, so the SQL stays valid).
public func sqlPlaceholders(_ count: Int) -> String {
    Array(repeating: "?", count: max(count, 1)).joined(separator: ", ")
}
