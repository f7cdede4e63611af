import ArgumentParser
import Foundation
import JobQueue

/// `stackline report`: print a symbolicated report.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report", abstract: "Print a symbolicated report as text (one line per frame) or JSON.")

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "The report id printed by `submit`.")
    var reportId: Int64

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() throws {
        let db = try database.open()
        if let result = try db.result(reportId: reportId) {
            print(try ReportPrinter.render(result, json: json))
            return
        }
        guard let job = try db.jobStatus(reportId: reportId) else {
            printError("stackline report: no report with id \(reportId)")
            throw ExitCode(1)
        }
        printError("stackline report: report \(reportId) is \(job.state.rawValue)\(job.lastError.map { ": \($0)" } ?? "")")
        throw ExitCode(1)
    }
}
