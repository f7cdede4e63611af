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

    func run() throws {
        let db = try database.open(for: "status")
        guard let reportId else {
            let counts = try db.stateCounts()
            for state in JobState.allCases { print("\(state.rawValue)\t\(counts[state] ?? 0)") }
            return
        }
        guard let job = try db.jobStatus(reportId: reportId) else {
            printError("stackline status: no report with id \(reportId)")
            throw ExitCode(1)
        }
        print("report\t\(job.reportId)")
        printLine("format\t\(job.format)")
        printLine("kind\t\(job.kind)")
        print("state\t\(job.state.rawValue)")
        print("attempts\t\(job.attempts)")
        if job.state == .queued, job.runAfter > db.now() {
            print(String(format: "retry in\t%.1fs", Double(job.runAfter - db.now()) / 1000))
        }
        if let error = job.lastError { printLine("last error\t\(error)") }
    }
}
