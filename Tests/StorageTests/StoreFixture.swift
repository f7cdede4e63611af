import Foundation
import ReportModel
import Storage
import TestSupport

/// The backends the store's backend-independent suites run on: SQLite in a temporary file, and
/// PostgreSQL in a fresh database of the test process's throwaway cluster (`PostgresCluster`).
enum Backend: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite, postgres
    var description: String { rawValue }
}


/// One store of `backend` with a clock the test moves by hand. `another()` opens a second
/// store on the same database, as a second process or node would.
struct StoreFixture {
    let backend: Backend
    let clock = ManualClock()
    let store: any QueueStore
    private let location: String
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

    private static func open(_ backend: Backend, _ location: String, _ clock: ManualClock) throws -> any QueueStore {
        switch backend {
        case .sqlite: try ServiceDatabase(path: location, clock: { clock.now })
        case .postgres: try PostgresDatabase(url: location, clock: { clock.now })
        }
    }

    /// A second connection to the same database, on the same clock.
    func another() throws -> any QueueStore { try Self.open(backend, location, clock) }

    func remove() { dir?.remove() }

    func report(_ n: Int, kind: ReportKind = .crash, version: String? = "1.0") -> NewReport {
        NewReport(raw: Data("report \(n)".utf8), format: "test", kind: kind, app: "App", version: version)
    }
}
