import ArgumentParser
import Foundation
import Storage
import Presentation

/// `stackline report`: print a symbolicated report.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Print a symbolicated report as text (one line per frame), JSON, or an Apple-style crash report.")

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "The report id printed by `submit`.")
    var reportId: Int64

    @Option(help: "Output: text (one line per frame), json (the report and its group) or apple (Apple's crash report layout, symbolicated side by side).")
    var format: ReportOutputFormat = .text

    @Flag(help: "Same as --format json.")
    var json = false

    func validate() throws {
        if json, format != .text, format != .json { throw ValidationError("--json and --format \(format.rawValue) disagree") }
    }

    func run() throws {
        let db = try database.open(for: "report")
        if let result = try db.result(reportId: reportId) {
            let report = try ReportPrinter.decode(result)
            print(try ReportPrinter.render(
                report, format: json ? .json : format, group: ReportPrinter.group(of: result, in: db),
                sources: ReportPrinter.sourceAnswers(for: report, in: db)))
            return
        }
        guard let job = try db.jobStatus(reportId: reportId) else {
            throw fail("stackline report: no report with id \(reportId)")
        }
        throw fail("stackline report: \(JobStateText.sentence(reportId: reportId, job))")
    }
}

extension ReportOutputFormat: ExpressibleByArgument {}
