import Foundation
import Storage
import TestSupport
import Testing

/// The `workers` table: what the master saves of its remote workers and `stackline workers` reads.
@Suite struct WorkerRegistryTests {
    static func row(_ id: String, name: String, heartbeat: Int64) -> WorkerRow {
        WorkerRow(
            id: id, name: name, address: id == "w2" ? nil : "10.0.0.\(id.count):7070", slots: 4, busy: 2, jobsDone: 17,
            cacheBytes: 5_000_000_000, holds: 312, fetches: 40, affinityHits: 9, affinityClaims: 12,
            connectedAt: 1_700_000_000_000, lastHeartbeat: heartbeat)
    }

    @Test(arguments: Backend.allCases) func rowsRoundTripInNameOrderAndAreReplacedById(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        #expect(try f.store.workers() == [])
        // Names that a locale's collation orders differently from bytes ("B" < "a" bytewise).
        let rows = [Self.row("w3", name: "build-b", heartbeat: 10), Self.row("w2", name: "build-a", heartbeat: 20),
                    Self.row("w1", name: "build-b", heartbeat: 30), Self.row("w4", name: "Build-c", heartbeat: 40)]
        try f.store.saveWorkers(rows)
        #expect(try f.store.workers() == [rows[3], rows[1], rows[2], rows[0]])
        // A second snapshot updates in place: same ids, new values.
        var busier = rows[2]
        busier.busy = 4
        busier.jobsDone = 18
        busier.address = nil
        busier.lastHeartbeat = 40
        try f.store.saveWorkers([busier])
        #expect(try f.store.workers() == [rows[3], rows[1], busier, rows[0]])
        // Reopening reads the same rows back (they are in the database, not in memory).
        #expect(try f.another().workers() == [rows[3], rows[1], busier, rows[0]])
    }

    @Test(arguments: Backend.allCases) func workersNotHeardFromAreDeleted(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        try f.store.saveWorkers([
            Self.row("w1", name: "a", heartbeat: 100), Self.row("w2", name: "b", heartbeat: 200),
            Self.row("w3", name: "c", heartbeat: 300),
        ])
        #expect(try f.store.deleteWorkers(lastHeartbeatBefore: 200) == 1)
        #expect(try f.store.workers().map(\.id) == ["w2", "w3"])
        #expect(try f.store.deleteWorkers(lastHeartbeatBefore: 200) == 0)
        #expect(try f.store.deleteWorkers(lastHeartbeatBefore: 301) == 2)
        #expect(try f.store.workers() == [])
    }

    @Test func aWorkerRowEncodesAsJSONAndBack() throws {
        let row = Self.row("w1", name: "build-a", heartbeat: 5)
        let decoded = try JSONDecoder().decode(WorkerRow.self, from: JSONEncoder().encode(row))
        #expect(decoded == row)
    }
}
