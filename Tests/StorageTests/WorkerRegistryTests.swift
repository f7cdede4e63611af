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

    @Test func rowsRoundTripInNameOrderAndAreReplacedById() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        #expect(try f.db.workers() == [])
        let rows = [Self.row("w3", name: "build-b", heartbeat: 10), Self.row("w2", name: "build-a", heartbeat: 20),
                    Self.row("w1", name: "build-b", heartbeat: 30)]
        try f.db.saveWorkers(rows)
        #expect(try f.db.workers() == [rows[1], rows[2], rows[0]])
        // A second snapshot updates in place: same ids, new values.
        var busier = rows[2]
        busier.busy = 4
        busier.jobsDone = 18
        busier.address = nil
        busier.lastHeartbeat = 40
        try f.db.saveWorkers([busier])
        #expect(try f.db.workers() == [rows[1], busier, rows[0]])
        // Reopening reads the same rows back (they are in the file, not in memory).
        #expect(try ServiceDatabase(path: f.db.path).workers() == [rows[1], busier, rows[0]])
    }

    @Test func workersNotHeardFromAreDeleted() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        try f.db.saveWorkers([
            Self.row("w1", name: "a", heartbeat: 100), Self.row("w2", name: "b", heartbeat: 200),
            Self.row("w3", name: "c", heartbeat: 300),
        ])
        #expect(try f.db.deleteWorkers(lastHeartbeatBefore: 200) == 1)
        #expect(try f.db.workers().map(\.id) == ["w2", "w3"])
        #expect(try f.db.deleteWorkers(lastHeartbeatBefore: 200) == 0)
        #expect(try f.db.deleteWorkers(lastHeartbeatBefore: 301) == 2)
        #expect(try f.db.workers() == [])
    }

    @Test func aWorkerRowEncodesAsJSONAndBack() throws {
        let row = Self.row("w1", name: "build-a", heartbeat: 5)
        let decoded = try JSONDecoder().decode(WorkerRow.self, from: JSONEncoder().encode(row))
        #expect(decoded == row)
    }
}
