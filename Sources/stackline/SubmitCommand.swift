import ArgumentParser
import Compression
import Foundation
import JSONFormat
import Presentation
import Intake
import IsolatedParsing
import Storage
import ReportFormats
import ReportModel
import ReportRendering
import WorkerProtocol

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
            are not followed. With --json, one JSON array describes every input (docs/json.md).
            """)

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "Report files, directories (all files inside, recursively), or - for stdin.")
    var inputs: [String]

    @Flag(help: "Block until every submitted report is symbolicated, then print the results.")
    var wait = false

    @Option(help: "With --wait, give up after this many seconds (exit status 1; the reports stay queued).")
    var timeout: Double?

    @Flag(help: "Print one JSON array, one entry per input (with --wait, each entry carries its report).")
    var json = false

    @Flag(help: "Store input that no parser accepts (its job is marked failed with the reason).")
    var acceptUnparsed = false

    @Option(help: "App name for reports that do not name their app (groups are listed and filtered by it).")
    var app: String?

    @Option(help: "App version for reports that do not carry one (groups count reports per version).")
    var version: String?

    @Option(help: "Largest accepted report after decompression, in bytes.")
    var maxSize = Zlib.defaultLimit

    @Option(help: ArgumentHelp(
        "For core files that name no mapped files (qemu-user's): the program that crashed.",
        discussion: "Its mappings and headers are added to the core, as the kernel writes them (docs/native.md)."))
    var exe: String?

    func validate() throws {
        if let timeout, !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds") }
        if timeout != nil && !wait { throw ValidationError("--timeout only applies with --wait") }
    }

    func run() throws {
        let db = try database.openOrCreate()
        let registry = FormatRegistry.standard
        // Read once for every core of the batch.
        let program = try exe.map { path in
            do { return try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) } catch {
                throw fail("stackline submit: --exe \(path): cannot read it (\(error.localizedDescription))")
            }
        }
        let items = ReportInput.expand(inputs)
        var entries: [Submission] = []

        for item in items {
            do {
                let outcomes = try submit(item, program: program, registry: registry, db: db)
                // A capture holding several crashes is stored as one report each: `label#N`.
                for (n, outcome) in outcomes.enumerated() {
                    let label = outcomes.count == 1 ? item.label : "\(item.label)#\(n + 1)"
                    switch outcome {
                    case .stored(let stored, _):
                        entries.append(Submission(input: label, outcome: .stored(stored)))
                        if !json {
                            printLine(items.count == 1 && outcomes.count == 1 ? "\(stored.reportId)" : "\(stored.reportId)\t\(label)")
                        }
                        if stored.duplicate {
                            printError("\(label): identical to report \(stored.reportId); nothing queued")
                        }
                    case .refused(let error):
                        let message = "\(SubmitError.unparseable(label, error))"
                        printError("stackline submit: \(message)")
                        entries.append(Submission(input: label, outcome: .refused(message)))
                    }
                }
            } catch {
                // Anything one input provokes (a database error storing it, say) is that input's
                // failure: the batch goes on and the exit status says so at the end.
                let message = error is SubmitError ? "\(error)" : "\(item.label): \(error)"
                printError("stackline submit: \(message)")
                entries.append(Submission(input: item.label, outcome: .refused(message)))
            }
        }
        let ids = entries.compactMap(\.reportId)
        var finished = true
        if wait && !ids.isEmpty {
            finished = try WaitProgress(db: StoreJobStates(store: db), reportIds: ids, timeout: timeout).run()
        }
        let failed = try printResults(entries, db: db)
        if !finished {
            throw fail("stackline submit: gave up after \(timeout ?? 0) s: some reports are not symbolicated yet (they stay queued; `stackline status` shows them)")
        }
        if failed || entries.contains(where: { $0.reportId == nil }) { throw ExitCode(1) }
    }

    private func submit(_ item: ReportInput, program: Data?, registry: FormatRegistry, db: any ServiceStore) throws -> [ReportIntake.Outcome] {
        var data: Data
        do { data = try item.load(limit: maxSize) } catch SubmitError.tooLarge(let label, let limit) {
            // A core past the limit (a process with large heaps) keeps its stacks and headers.
            guard let core = item.mappedCore() else { throw SubmitError.tooLarge(label, limit) }
            do { data = try ElfCoreRewriting.slimmed(core) } catch {
                throw SubmitError.unreadable(label, "a core past \(limit) bytes could not be reduced to its stacks: \(error)")
            }
            guard data.count <= limit else { throw SubmitError.tooLarge(label, limit) }
            printError("\(label): a core of \(core.count) bytes, past \(limit): kept its stacks and headers (\(data.count) bytes)")
        }
        if let exe, let program {
            guard ElfCoreFormat().matches(data) else { throw SubmitError.exeNeedsCore(item.label) }
            do {
                switch try ElfCoreRewriting.addingExecutable(program, path: exe, to: data) {
                case .added(let core): data = core
                case .alreadyNamesFiles: printError("\(item.label): the core names its mapped files itself; --exe is not needed")
                }
            } catch {
                throw SubmitError.exeDoesNotFit(item.label, error.description)
            }
        }
        do {
            return try ReportIntake(db: db, parser: InProcessParser(registry: registry)).submit(
                data, defaults: .init(app: app, version: version), acceptUnparsed: acceptUnparsed)
        } catch let error as ParseRefusal {
            throw SubmitError.unparseable(item.label, error)
        }
    }

    /// Prints what `--json` and `--wait` ask for; true when a waited-for report failed.
    private func printResults(_ entries: [Submission], db: any ServiceStore) throws -> Bool {
        var failed = false
        var documents: [JSONValue] = []
        for entry in entries {
            var document = entry.document
            if wait, let id = entry.reportId {
                if let result = try db.result(reportId: id) {
                    document["state"] = .string(JobState.done.rawValue)
                    let group = ReportPrinter.group(of: result, in: db)
                    if json {
                        document["report"] = .object(try ReportPrinter.document(result, group: group))
                    } else {
                        print(try ReportPrinter.render(result, format: .text, group: group))
                    }
                } else if let status = try db.jobStatus(reportId: id) {
                    document["state"] = .string(status.state.rawValue)
                    if status.state == .failed {
                        failed = true
                        let why = JobStateText.sentence(reportId: id, status)
                        document["error"] = .string(why)
                        printError("stackline submit: \(why)")
                    }
                }
            }
            documents.append(.object(document))
        }
        if json { print(JSONReportRenderer.render(object: .array(documents))) }
        return failed
    }
}

/// One input of a `submit`, as `--json` describes it.
struct Submission {
    enum Outcome {
        case stored(SubmitOutcome)
        case refused(String)
    }
    var input: String
    var outcome: Outcome

    var reportId: Int64? {
        if case .stored(let o) = outcome { o.reportId } else { nil }
    }

    /// `{input, reportId, duplicate}` or `{input, error}`.
    var document: [String: JSONValue] {
        switch outcome {
        case .stored(let o): ["input": .string(input), "reportId": .integer(o.reportId), "duplicate": .bool(o.duplicate)]
        case .refused(let message): ["input": .string(input), "error": .string(message)]
        }
    }
}
