import Foundation
import ReportModel
import Storage
import TestSupport



/// One store of `backend` with a clock the test moves by hand. `another()` opens a second
/// store on the same database, as a second process or node would; `sql` reads it through the
/// engine's own shell (`sqlite3`, `psql`), an oracle that shares no code with the store.
struct StoreFixture {
    let backend: Backend
    let clock = ManualClock()
    let store: any ServiceStore
    /// The SQLite file's path or the PostgreSQL database's URL.
    let location: String
    private let dir: TempDirectory?

    init(_ backend: Backend) throws {
        self.backend = backend
        switch backend {
        case .sqlite:
            let dir = try TempDirectory("store")
            self.dir = dir
            location = dir.file("queue.sqlite")
        case .postgres:
            dir = nil
            location = try PostgresCluster.shared.get().makeDatabase()
        }
        store = try Self.open(backend, location, clock)
    }

    private static func open(_ backend: Backend, _ location: String, _ clock: ManualClock) throws -> any ServiceStore {
        switch backend {
        case .sqlite: try ServiceDatabase(path: location, clock: { clock.now })
        case .postgres: try PostgresDatabase(url: location, clock: { clock.now })
        }
    }

    /// A second connection to the same database, on the same clock.
    func another() throws -> any ServiceStore { try Self.open(backend, location, clock) }

    func remove() { dir?.remove() }

    /// `query`'s rows as JSON objects, read by the engine's own shell. Write it in the SQL
    /// both engines accept.
    func sql(_ query: String) throws -> [[String: Any]] { try backend.rows(location, query) }

    /// Runs `script` behind the store's back (`Backend.execute`).
    func execute(_ script: String) throws { try backend.execute(location, script) }

    /// The one integer `query` returns.
    func sqlInt(_ query: String) throws -> Int { try backend.int(location, query) }

    func report(_ n: Int, kind: ReportKind = .crash, version: String? = "1.0") -> NewReport {
        NewReport(raw: Data("report \(n)".utf8), format: "test", kind: kind, app: "App", version: version)
    }
}
