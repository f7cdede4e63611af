import ArgumentParser
import Foundation
import Storage
import APIModel
import JSONFormat
import Presentation

/// `stackline status`: queue counts, or one report's job.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show queue counts by state, or one report's job state, attempts and last error.")

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "A report id.")
    var reportId: Int64?

    @Flag(help: "Machine-readable output.")
    var json = false

    func run() throws {
        let db = try database.open(for: "status")
        guard let reportId else {
            let counts = try db.stateCounts()
            if json {
                print(try encodeJSON(queueCountsJSON(counts)))
                return
            }
            for state in JobState.allCases { print("\(state.rawValue)\t\(counts[state] ?? 0)") }
            return
        }
        guard let job = try db.jobStatus(reportId: reportId) else {
            throw fail("stackline status: no report with id \(reportId)")
        }
        let view = JobStatusJSON(job, now: db.now())
        if json {
            print(try encodeJSON(view))
            return
        }
        print("report\t\(job.reportId)")
        printLine("format\t\(job.format)")
        printLine("kind\t\(job.kind)")
        print("state\t\(job.state.rawValue)")
        print("attempts\t\(job.attempts)")
        if let retryAt = view.retryAt {
            print(String(format: "retry in\t%.1fs", retryAt.timeIntervalSinceNow))
        }
        if let error = job.lastError { printLine("last error\t\(error)") }
    }
}
