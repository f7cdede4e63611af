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

    /// Inserts one row into a table keyed by an `id` the database assigns, and returns that id:
    /// SQLite's last row id (cheaper than `RETURNING`, measured on the submit path:
    /// scripts/bench-queue-store.sh), PostgreSQL's `RETURNING id`.
    func insert(_ sql: String, _ arguments: [SQLValue]) throws -> Int64

    /// Runs one query and hands its rows to `body` one at a time until `body` returns false:
    /// for a scan that usually stops early (an affinity claim's first hit), where reading and
    /// converting every row would be the cost.
    func scan(_ sql: String, _ arguments: [SQLValue], _ body: (SQLRow) throws -> Bool) throws
}

extension SQLExecutor {
    @discardableResult
    public func execute(_ sql: String, _ arguments: SQLBindable...) throws -> Int {
        try execute(sql, arguments.map(\.sqlValue))
    }

    public func rows(_ sql: String, _ arguments: SQLBindable...) throws -> [SQLRow] {
        try rows(sql, arguments.map(\.sqlValue))
    }

    public func insert(_ sql: String, _ arguments: SQLBindable...) throws -> Int64 {
        try insert(sql, arguments.map(\.sqlValue))
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

extension Array {
    /// The values in runs of at most 500, one `IN (…)` list per statement: SQLite refuses a
    /// statement with more than 32,766 arguments, and 500 leaves room for the others.
    public var sqlChunks: [ArraySlice<Element>] {
        stride(from: 0, to: count, by: 500).map { self[$0..<Swift.min($0 + 500, count)] }
    }
}

extension SQLExecutor {
    /// The first column of the first row, or nil when there is no row or it is NULL.
    public func int64(_ sql: String, _ arguments: [SQLValue]) throws -> Int64? {
        try rows(sql, arguments).first?.optionalInt64(0)
    }

    public func int64(_ sql: String, _ arguments: SQLBindable...) throws -> Int64? {
        try int64(sql, arguments.map(\.sqlValue))
    }

    public func int(_ sql: String, _ arguments: [SQLValue]) throws -> Int? {
        try rows(sql, arguments).first?.optionalInt(0)
    }

    public func int(_ sql: String, _ arguments: SQLBindable...) throws -> Int? {
        try int(sql, arguments.map(\.sqlValue))
    }

    public func string(_ sql: String, _ arguments: [SQLValue]) throws -> String? {
        try rows(sql, arguments).first?.optionalString(0)
    }

    public func string(_ sql: String, _ arguments: SQLBindable...) throws -> String? {
        try string(sql, arguments.map(\.sqlValue))
    }

    /// Whether the statement returns a row whose first column is true (non-zero).
    public func bool(_ sql: String, _ arguments: [SQLValue]) throws -> Bool {
        guard let value = try rows(sql, arguments).first?.optionalInt64(0) else { return false }
        return value != 0
    }

    public func bool(_ sql: String, _ arguments: SQLBindable...) throws -> Bool {
        try bool(sql, arguments.map(\.sqlValue))
    }
}

extension SQLDialect {
    /// The two-argument minimum and maximum of scalars: SQLite overloads `MIN`/`MAX`,
    /// PostgreSQL names them `LEAST`/`GREATEST` (its `MIN` is only the aggregate).
    public var least: String { self == .sqlite ? "MIN" : "LEAST" }
    public var greatest: String { self == .sqlite ? "MAX" : "GREATEST" }

    /// Appended to a `SELECT` whose rows the transaction goes on to update from what it read:
    /// PostgreSQL locks them until commit, so a concurrent writer waits and reads the result;
    /// SQLite needs nothing, its write transaction already excludes every other writer.
    public var forUpdate: String { self == .sqlite ? "" : " FOR UPDATE" }
}
