import ArgumentParser
import Foundation
import Grouping
import Storage
import Logging
import Master
import APIModel
import StacklineLogging
import SystemCalls

/// `stackline master`: supervise workers and drain the queue.
struct MasterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "master",
        abstract: "Run the dispatcher: claim jobs, feed them to stackline-worker processes, store results.",
        discussion: "SIGTERM or SIGINT stops claiming and lets in-flight jobs finish before --drain seconds.")

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var master: MasterOptions

    @Flag(help: "Exit once no job is queued or running (waiting out retry backoffs).")
    var once = false

    @Option(help: "Least severe log messages printed.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        guard (master.workers ?? 1) >= 1 else { throw ValidationError("--workers must be at least 1") }
        try master.validate()
    }

    func run() throws {
        SystemCall.keepFreedMemoryForReuse()
        let level = logLevel
        LoggingSystem.bootstrap { EscapingLogHandler.standardError(label: $0, level: level) }
        let logger = Logger(label: "stackline.master")
        let config = try master.configuration(command: "master", once: once)
        let db = try database.openOrCreate()
        try Dispatcher(db: db, config: config, logger: logger).run()
    }
}

extension SinceDate {
    /// The length of a duration argument (`90d`); nil for an absolute date.
    var duration: Int64? {
        if case .ago(let ms) = value { ms } else { nil }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
