import ArgumentParser
import Foundation
import JobQueue

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
            let output = json ? .json : format
            print(try ReportPrinter.render(result, format: output))
            if output == .text, let fingerprint = result.fingerprint,
                let group = try? db.group(fingerprint: fingerprint)?.summary
            {
                print("")
                printLine("Group: \(group.fingerprint)  \(group.title)  (\(group.count) report\(group.count == 1 ? "" : "s"))")
            }
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
