import ArgumentParser
import Foundation
import JobQueue

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
                print(try encodeJSON(Dictionary(uniqueKeysWithValues: JobState.allCases.map { ($0.rawValue, counts[$0] ?? 0) })))
                return
            }
            for state in JobState.allCases { print("\(state.rawValue)\t\(counts[state] ?? 0)") }
            return
        }
        guard let job = try db.jobStatus(reportId: reportId) else {
            throw fail("stackline status: no report with id \(reportId)")
        }
        let retryAt = job.state == .queued && job.runAfter > db.now() ? Date(milliseconds: job.runAfter) : nil
        if json {
            print(try encodeJSON(JobStatusJSON(
                reportId: job.reportId, format: job.format, kind: "\(job.kind)", state: job.state.rawValue,
                attempts: job.attempts, lastError: job.lastError, retryAt: retryAt, updatedAt: Date(milliseconds: job.updatedAt))))
            return
        }
        print("report\t\(job.reportId)")
        printLine("format\t\(job.format)")
        printLine("kind\t\(job.kind)")
        print("state\t\(job.state.rawValue)")
        print("attempts\t\(job.attempts)")
        if let retryAt {
            print(String(format: "retry in\t%.1fs", retryAt.timeIntervalSinceNow))
        }
        if let error = job.lastError { printLine("last error\t\(error)") }
    }
}

/// The `status REPORT --json` shape.
struct JobStatusJSON: Encodable {
    var reportId: Int64
    var format: String
    var kind: String
    var state: String
    var attempts: Int
    var lastError: String?
    var retryAt: Date?
    var updatedAt: Date
}
