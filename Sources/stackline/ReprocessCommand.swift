import ArgumentParser
import Foundation
import JSONFormat
import Storage

/// `stackline reprocess`: symbolicate and group stored reports again, e.g. after new grouping
/// rules (`master --grouping-rules`). Merges and triage states stay (docs/triage.md).
struct ReprocessCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reprocess",
        abstract: "Queue stored reports to be symbolicated and grouped again (every report, or one group's).",
        discussion: """
            Jobs are queued at reprocessing priority, after fresh reports; a report with a job \
            queued or running is skipped. The next `stackline master` or `serve` processes them.
            """)

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Every stored report.")
    var all = false

    @Option(help: "Only the reports filed under this group (fingerprint or unique prefix).")
    var group: String?

    @Flag(help: "Machine-readable output.")
    var json = false

    func validate() throws {
        guard all != (group != nil) else { throw ValidationError("give --all or --group FP") }
    }

    func run() throws {
        let db = try database.open(for: "reprocess")
        var fingerprint: String?
        if let group {
            do {
                guard let found = try db.groupFingerprint(prefix: group) else {
                    throw fail("stackline reprocess: no group with fingerprint \(group)")
                }
                fingerprint = found
            } catch let error as GroupQueryError {
                throw fail("stackline reprocess: \(error.description)")
            }
        }
        let queued = try db.requeueReports(inGroup: fingerprint)
        if json {
            print(try encodeJSON(["queued": queued]))
        } else {
            print("queued \(queued) report\(queued == 1 ? "" : "s") for reprocessing (run `stackline master` or `serve` to process them)")
        }
    }
}
