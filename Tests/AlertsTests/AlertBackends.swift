import Foundation
import Storage
import TestSupport

/// One store of `backend` (TestSupport's `Backend`) on the test's clock, as StorageTests'
/// `StoreFixture` opens one. `another()` opens a second store on the same database, as a second
/// node would; `sqlInt` reads it through the engine's own shell (`sqlite3`, `psql`), an oracle
/// that shares no code with the store.
struct AlertStoreFixture {
    typealias Clock = @Sendable () -> Int64

    let backend: Backend
    let store: any ServiceStore
    /// The SQLite file's path or the PostgreSQL database's URL.
    let location: String
    private let clock: Clock
    private let dir: TempDirectory?

    init(_ backend: Backend, clock: @escaping Clock) throws {
        self.backend = backend
        self.clock = clock
        switch backend {
        case .sqlite:
            let dir = try TempDirectory("alerts")
            self.dir = dir
            location = dir.file("db.sqlite")
        case .postgres:
            dir = nil
            location = try PostgresCluster.shared.get().makeDatabase()
        }
        store = try Self.open(backend, location, clock)
    }

    private static func open(_ backend: Backend, _ location: String, _ clock: @escaping Clock) throws -> any ServiceStore {
        switch backend {
        case .sqlite: try ServiceDatabase(path: location, clock: clock)
        case .postgres: try PostgresDatabase(url: location, clock: clock)
        }
    }

    /// A second store on the same database and clock.
    func another() throws -> any ServiceStore { try Self.open(backend, location, clock) }

    func remove() { dir?.remove() }

    /// The one integer `query` returns, read by the engine's own shell. Write it in the SQL
    /// both engines accept.
    func sqlInt(_ query: String) throws -> Int { try backend.int(location, query) }
}
