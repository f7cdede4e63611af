import ArgumentParser
import Foundation
import Storage
import APIModel
import JSONFormat
import Presentation

/// `stackline workers`: the remote workers connected to the `stackline serve` of this database.
struct WorkersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "workers",
        abstract: "List the remote workers connected to the server of this database.",
        discussion: """
            Workers on other machines (`stackline-worker --connect`) as their master last \
            recorded them, every few seconds: name, address, slots, busy slots, jobs done, cache \
            size, build ids held, debug files fetched, and affinity hits (claims whose job's \
            debug files the worker already held). A worker silent for twice the lease \
            (10 s at least) is dropped. GET /api/v1/workers answers the same from the server.
            """)

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Machine-readable output.")
    var json = false

    func run() throws {
        let db = try database.open(for: "workers")
        let rows = try db.workers()
        if json {
            print(try encodeJSON(WorkersJSON(rows)))
            return
        }
        guard !rows.isEmpty else {
            print("no remote workers connected")
            return
        }
        let now = db.now()
        var table = Table("NAME", "ADDRESS", "SLOTS", "BUSY", "DONE", "CACHE", "HOLDS", "FETCHES", "AFFINITY", "HEARD")
        for row in rows {
            let affinity = row.affinityClaims == 0 ? "-" : "\(row.affinityHits)/\(row.affinityClaims)"
            table.add(
                row.name, row.address ?? "-", "\(row.slots)", "\(row.busy)", "\(row.jobsDone)", byteCount(row.cacheBytes),
                "\(row.holds)", "\(row.fetches)", affinity, String(format: "%.1fs ago", Double(max(0, now - row.lastHeartbeat)) / 1000))
        }
        print(table.render())
    }

    private func byteCount(_ n: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: n, countStyle: .binary)
    }
}
