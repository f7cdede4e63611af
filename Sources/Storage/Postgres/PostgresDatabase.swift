import Foundation
import PostgresClient
import SQLInterface

/// The PostgreSQL backend: the same store code as SQLite's (`SQLStore`), over a small pool of
/// libpq connections. Several `serve` nodes can share one database; what keeps them from
/// stepping on each other is in the statements (row locks, `SKIP LOCKED` claims, fencing
/// tokens), not in this process.
///
/// Sendable: the pool's state is guarded by `condition`; a connection is used by one thread
/// at a time, between its checkout and its return.
public final class PostgresDatabase: @unchecked Sendable {
    public typealias Clock = @Sendable () -> Int64

    /// The URL as given, for messages (`PostgresURL.redacted` strips any password).
    public let url: String
    private let password: String?
    private let clock: Clock
    private let maxConnections: Int
    private let condition = NSCondition()
    private var idle: [PostgresConnection] = []
    private var open = 0

    /// How many times a transaction the server aborted to break a deadlock, a serialization
    /// failure or a unique-key race (two nodes inserting the same new group) is run again.
    static let retries = 8

    /// Connects once (so a wrong URL or password fails here, not at the first job) and brings
    /// the schema up to date under an advisory lock. Without `clock`, times are the database
    /// server's (`serverClock`), so every node stamps leases, arrivals and sign-outs on one clock.
    public init(url: String, password: String? = nil, maxConnections: Int = 8, clock: Clock? = nil) throws {
        self.url = url
        self.password = password
        self.maxConnections = max(1, maxConnections)
        let first = try PostgresConnection(url: url, password: password)
        try Self.migrate(first)
        self.clock = try clock ?? Self.serverClock(first)
        idle.append(first)
        open = 1
    }

    public static let systemClock: Clock = { Int64(Date().timeIntervalSince1970 * 1000) }

    /// The server's clock, read once and kept as an offset from this machine's: the server's
    /// time at the middle of the round trip that read it, so nodes agree to within half their
    /// round trips however far their own clocks are apart (docs/scaling.md, "One clock").
    static func serverClock(_ connection: PostgresConnection) throws -> Clock {
        let before = systemClock()
        let server = try connection.transaction { db in
            try db.int64("SELECT CAST(extract(epoch FROM clock_timestamp()) * 1000 AS bigint)") ?? before
        }
        let after = systemClock()
        let offset = server - (before + (after - before) / 2)
        return { systemClock() + offset }
    }

    /// Applies the migrations this database has not seen, in order, in one transaction that
    /// holds an advisory lock, so concurrent starts run them once.
    static func migrate(_ connection: PostgresConnection) throws {
        try connection.transaction { db in
            try AdvisoryLock.take(db, PostgresSchema.migrationLock)
            try db.executeScript("CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at bigint NOT NULL)")
            let applied = Set(try db.rows("SELECT name FROM schema_migrations").map { try $0.string(0) })
            for migration in PostgresSchema.migrations where !applied.contains(migration.name) {
                try db.executeScript(migration.sql)
                try migration.fill?(db)
                try db.execute(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", migration.name, Self.systemClock())
            }
        }
    }

    private func checkout() throws -> PostgresConnection {
        condition.lock()
        while idle.isEmpty && open >= maxConnections { condition.wait() }
        if let connection = idle.popLast() {
            condition.unlock()
            if !connection.isConnected {
                do { try connection.reset() } catch {
                    checkin(connection)
                    throw error
                }
            }
            return connection
        }
        open += 1
        condition.unlock()
        do {
            return try PostgresConnection(url: url, password: password)
        } catch {
            condition.lock()
            open -= 1
            condition.signal()
            condition.unlock()
            throw error
        }
    }

    private func checkin(_ connection: PostgresConnection) {
        condition.lock()
        idle.append(connection)
        condition.signal()
        condition.unlock()
    }

    /// Runs `body` in a transaction on a pooled connection, again from the start when the
    /// server aborted it for a reason another attempt can get past. A server that cannot be
    /// reached is `StorageError.unavailable`, which callers treat as passing (the master's
    /// slots wait and try again, routes answer 503); the connection is made again at its next use.
    private func transaction<T>(begin: String, _ body: (SQLExecutor) throws -> T) throws -> T {
        do {
            return try retrying(begin: begin, body)
        } catch let error as PostgresError {
            switch error {
            case .connect(let why), .connectionLost(let why): throw StorageError.unavailable(why)
            default: throw error
            }
        }
    }

    private func retrying<T>(begin: String, _ body: (SQLExecutor) throws -> T) throws -> T {
        var attempt = 0
        while true {
            let connection = try checkout()
            defer { checkin(connection) }
            do {
                return try connection.transaction(begin: begin) { try body($0) }
            } catch let error as PostgresError where attempt < Self.retries
                && (error.isDeadlock || error.isSerializationFailure || error.isUniqueViolation)
            {
                attempt += 1
            }
        }
    }
}

extension PostgresDatabase: SQLStore {
    public func now() -> Int64 { clock() }

    public var location: String { PostgresURL.redacted(url) }

    /// A transaction that is given a transaction id: fails on a read-only server (a standby)
    /// as well as on a lost connection.
    public func checkWritable() throws {
        try write { db in _ = try db.rows("SELECT 1 FROM (SELECT pg_current_xact_id()) AS assigned") }
    }

    /// READ COMMITTED: each statement sees what committed before it, and an `UPDATE` that
    /// waited for a row lock re-checks its `WHERE` against the row as committed, which is what
    /// the fencing tokens and the ledger's upserts rely on (docs/scaling.md).
    public func write<T>(_ body: (SQLExecutor) throws -> T) throws -> T { try transaction(begin: "BEGIN", body) }

    /// REPEATABLE READ: every statement of the read sees one snapshot, as a SQLite read
    /// transaction does (a page's counts and its list agree).
    public func read<T>(_ body: (SQLExecutor) throws -> T) throws -> T {
        try transaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", body)
    }
}

extension PostgresDatabase: JobLeasing {}

extension PostgresDatabase: WorkerRoster {}

extension PostgresDatabase {
    /// Nothing: PostgreSQL's autovacuum makes deleted rows' space reusable, and a `VACUUM FULL`
    /// locks each table for as long as it rewrites it, which a running installation cannot
    /// afford (docs/backup.md).
    public func reclaimSpace(_ policy: ReclaimPolicy) throws -> VacuumMethod { .none }

    /// The database's size on disk, as PostgreSQL counts it.
    public func databaseBytes() throws -> Int64 {
        try read { db in try db.int64("SELECT pg_database_size(current_database())") ?? 0 }
    }
}
