import ArgumentParser
import Foundation
import APIModel
import JSONFormat
import Storage

/// `stackline prune`: retention by age.
struct PruneCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Delete reports received before a cutoff, with their jobs, results and missing-symbol rows.",
        discussion: """
            Group counts, versions, first/last seen and representatives stay exact; a group left \
            without reports is deleted. Reports whose job is queued or running are kept. The freed \
            space is returned to the file system (incremental vacuum, or one VACUUM that switches an \
            older database to incremental auto-vacuum).
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Delete reports received before then: 30m, 24h, 30d, 2w ago, or a date (2026-11-01).")
    var olderThan: SinceDate

    @Flag(help: "Keep every group's representative report, so no group disappears or loses its example.")
    var keepGroups = false

    @Flag(help: "Machine-readable output.")
    var json = false

    func run() throws {
        let db = try database.open(for: "prune")
        let outcome = try db.prune(
            PruneRequest(receivedBefore: olderThan.milliseconds(now: db.now()), keepGroups: keepGroups))
        if json {
            print(try encodeJSON(PruneJSON(outcome)))
            return
        }
        let cutoff = Date(milliseconds: outcome.receivedBefore).rfc3339
        print("deleted reports received before \(cutoff):")
        print("  reports\t\(outcome.reportsDeleted)")
        print("  jobs\t\(outcome.jobsDeleted)")
        print("  results\t\(outcome.resultsDeleted)")
        print("  missing-symbol rows\t\(outcome.missingSymbolsDeleted)")
        print("groups emptied and deleted\t\(outcome.groupsDeleted)")
        print("groups that lost reports\t\(outcome.groupsUpdated)")
        print("alert events\t\(outcome.alertEventsDeleted)")
        print("launch counter rows (whole days)\t\(outcome.sessionCounterRowsDeleted)")
        if outcome.keptActive > 0 {
            print("kept (job queued or running)\t\(outcome.keptActive)")
        }
        if keepGroups {
            print("kept (group representatives)\t\(outcome.keptRepresentatives)")
        }
        let saved = outcome.bytesBefore - outcome.bytesAfter
        switch outcome.vacuum {
        case .none:
            print("space\tnot reclaimed (\(bytes(outcome.bytesAfter)))")
        case .incremental, .full:
            print("space\t\(bytes(outcome.bytesBefore)) -> \(bytes(outcome.bytesAfter)), \(bytes(saved)) reclaimed by \(outcome.vacuum.rawValue)")
        }
    }

    private func bytes(_ n: Int64) -> String {
        n < 1 << 20 ? String(format: "%.1f KiB", Double(n) / 1024) : String(format: "%.1f MiB", Double(n) / 1048576)
    }
}

/// The `prune --json` shape: `PruneOutcome` with its cutoff as an RFC 3339 time.
struct PruneJSON: Encodable {
    var receivedBefore: Date
    var reportsDeleted: Int
    var jobsDeleted: Int
    var resultsDeleted: Int
    var missingSymbolsDeleted: Int
    var groupsDeleted: Int
    var groupsUpdated: Int
    var keptActive: Int
    var keptRepresentatives: Int
    var alertEventsDeleted: Int
    var sessionCounterRowsDeleted: Int
    var vacuum: String
    var bytesBefore: Int64
    var bytesAfter: Int64

    init(_ o: PruneOutcome) {
        receivedBefore = Date(milliseconds: o.receivedBefore)
        reportsDeleted = o.reportsDeleted
        jobsDeleted = o.jobsDeleted
        resultsDeleted = o.resultsDeleted
        missingSymbolsDeleted = o.missingSymbolsDeleted
        groupsDeleted = o.groupsDeleted
        groupsUpdated = o.groupsUpdated
        keptActive = o.keptActive
        keptRepresentatives = o.keptRepresentatives
        alertEventsDeleted = o.alertEventsDeleted
        sessionCounterRowsDeleted = o.sessionCounterRowsDeleted
        vacuum = o.vacuum.rawValue
        bytesBefore = o.bytesBefore
        bytesAfter = o.bytesAfter
    }
}
