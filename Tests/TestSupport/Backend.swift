import Foundation

/// The database backends the backend-independent suites run on: SQLite in a temporary file,
/// and PostgreSQL in a fresh database of the test process's throwaway cluster (`PostgresCluster`).
public enum Backend: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite, postgres
    public var description: String { rawValue }

    /// A new, empty database of this backend: a file path under `directory` (not created yet),
    /// or a PostgreSQL URL.
    public func newDatabase(in directory: String) throws -> String {
        switch self {
        case .sqlite: return directory + "/data/stackline.sqlite"
        case .postgres: return try PostgresCluster.shared.get().makeDatabase()
        }
    }

    /// `query`'s rows as JSON objects, read through the engine's own shell (`sqlite3`, `psql`):
    /// an oracle that shares no code with the store. Write it in the SQL both engines accept.
    public func rows(_ location: String, _ query: String) throws -> [[String: Any]] {
        switch self {
        case .sqlite: try TestSupport.sqlite(location, query)
        case .postgres: try postgresRows(location, query)
        }
    }

    /// Runs `script` (statements, no rows) through the engine's own shell: what a test does to
    /// a database behind the store's back (an older schema, a tampered count).
    public func execute(_ location: String, _ script: String) throws {
        let out = switch self {
        case .sqlite: try runProcess("sqlite3", ["-cmd", ".timeout 10000", location, script], timeout: 60)
        case .postgres:
            try runProcess("\(PostgresCluster.binaries)/psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", location, "-c", script], timeout: 60)
        }
        guard out.succeeded else { throw TestSupportError(out.summary) }
    }

    /// The one integer `query` returns.
    public func int(_ location: String, _ query: String) throws -> Int {
        let rows = try rows(location, query)
        guard let value = rows.first?.values.first as? Int else { throw TestSupportError("\(query) → \(rows)") }
        return value
    }
}
