import SQLInterface

/// A database the backend-independent store code runs on: SQLite (`ServiceDatabase`) or
/// PostgreSQL (`PostgresDatabase`). What differs between them is only how a transaction is
/// opened and retried; the statements inside are the same code (`SQLExecutor`).
public protocol SQLStore: Sendable {
    /// Milliseconds since the Unix epoch on the store's clock: what leases, `run_after` and
    /// arrival times are compared with.
    func now() -> Int64

    /// One write transaction. On SQLite an IMMEDIATE one (the write lock is taken first); on
    /// PostgreSQL one that is run again from the start when the server aborts it for a
    /// deadlock or a serialization failure, so `body` must have no effect outside it.
    func write<T>(_ body: (SQLExecutor) throws -> T) throws -> T

    /// One read-only transaction: a consistent snapshot.
    func read<T>(_ body: (SQLExecutor) throws -> T) throws -> T

    /// The database's size on disk, as the engine counts it.
    func databaseBytes() throws -> Int64

    /// Hands the space deleted rows held back to the file system, after a prune.
    func reclaimSpace(_ policy: ReclaimPolicy) throws -> VacuumMethod

    /// Throws unless a write transaction can be taken and committed (`/readyz`).
    func checkWritable() throws

    /// Where the data lives, for logs and messages (a password is never part of it).
    var location: String { get }
}

/// A store the master's lease loop and the queue's own commands run on, whichever the backend.
public typealias QueueStore = SQLStore & JobLeasing

/// Everything `stackline serve` keeps in its database, on either backend: the queue, the
/// roster of remote workers, and the rest as `SQLStore` extensions (groups, triage, search,
/// sessions, alerts, tokens, retention).
public typealias ServiceStore = SQLStore & JobLeasing & WorkerRoster
