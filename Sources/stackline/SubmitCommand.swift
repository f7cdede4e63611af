import ArgumentParser
import Compression
import Foundation
import JobQueue
import ReportFormats
import ReportModel

/// `stackline submit`: store reports and enqueue their jobs.
struct SubmitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Store crash or lag reports (plain or gzip) and queue them for symbolication.",
        discussion: """
            Prints one report id per input (with its path when there are several). A report \
            identical to one already stored prints the existing id and queues nothing. An input \
            that cannot be read or parsed is named on stderr and the batch goes on; the exit \
            status is then 1. Only regular files are read; inside a directory, symbolic links \
            are not followed.
            """)

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "Report files, directories (all files inside, recursively), or - for stdin.")
    var inputs: [String]

    @Flag(help: "Block until every submitted report is symbolicated, then print the results.")
    var wait = false

    @Flag(help: "With --wait, print results as JSON.")
    var json = false

    @Flag(help: "Store input that no parser accepts (its job is marked failed with the reason).")
    var acceptUnparsed = false

    @Option(help: "Largest accepted report after decompression, in bytes.")
    var maxSize = Zlib.defaultLimit

    func run() throws {
        let db = try database.openOrCreate()
        let registry = FormatRegistry.standard
        let items = ReportInput.expand(inputs)
        var submitted: [(label: String, id: Int64)] = []
        var refused = 0

        for item in items {
            do {
                let outcome = try submit(item, registry: registry, db: db)
                submitted.append((item.label, outcome.reportId))
                printLine(items.count == 1 ? "\(outcome.reportId)" : "\(outcome.reportId)\t\(item.label)")
                if outcome.duplicate {
                    printError("\(item.label): identical to report \(outcome.reportId); nothing queued")
                }
            } catch let error as SubmitError {
                printError("stackline submit: \(error)")
                refused += 1
            } catch {
                // Anything else one input provokes (a database error storing it, say) is that
                // input's failure too: the batch goes on and the exit status says so at the end.
                printError("stackline submit: \(item.label): \(error)")
                refused += 1
            }
        }
        if wait && !submitted.isEmpty {
            try WaitProgress(db: db, reportIds: submitted.map(\.id)).run()
            try printResults(submitted.map(\.id), db: db)
        }
        if refused > 0 { throw ExitCode(1) }
    }

    private func submit(_ item: ReportInput, registry: FormatRegistry, db: JobDatabase) throws -> SubmitOutcome {
        let data = try item.load(limit: maxSize)
        do {
            let report = try registry.detectAndParse(data)
            return try db.submit(NewReport(
                raw: data, format: report.format, kind: report.kind, app: report.app?.name,
                version: report.app?.version))
        } catch let error as ReportParseError {
            guard acceptUnparsed else { throw SubmitError.unparseable(item.label, error) }
            return try db.submit(NewReport(
                raw: data, format: "unparsed", kind: .crash, rejectedBecause: "input error: \(error)"))
        }
    }

    private func printResults(_ ids: [Int64], db: JobDatabase) throws {
        var failed = false
        for id in ids {
            if let result = try db.result(reportId: id) {
                print(try ReportPrinter.render(result, json: json))
            } else {
                let status = try db.jobStatus(reportId: id)
                printError("report \(id): \(status?.state.rawValue ?? "unknown"): \(status?.lastError ?? "no result")")
                failed = true
            }
        }
        if failed { throw ExitCode(1) }
    }
}
