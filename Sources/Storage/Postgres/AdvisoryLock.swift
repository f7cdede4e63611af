import SQLInterface

/// PostgreSQL's transaction-scoped advisory locks: held until the transaction ends, so no
/// unlock can be forgotten. The keys are 64-bit constants nothing else uses.
enum AdvisoryLock {
    /// Waits for lock `key`, exclusive or shared. Wrapped in a `SELECT 1`: the function
    /// answers `void`, a type the client does not decode.
    static func take(_ db: SQLExecutor, _ key: Int64, shared: Bool = false) throws {
        let function = shared ? "pg_advisory_xact_lock_shared" : "pg_advisory_xact_lock"
        _ = try db.rows("SELECT 1 FROM (SELECT \(function)(?)) AS held", key)
    }
}
