import ArgumentParser
import Foundation
import ServiceRuntime
import SymbolStore
import WorkerProtocol

/// The environment, read once as the program starts (`Stackline.main`); commands take their
/// defaults from it, and pass values, never the environment, to the modules they call.
let processEnvironment = StacklineEnvironment(ProcessInfo.processInfo.environment)

@main
struct Stackline: AsyncParsableCommand {
    /// ArgumentParser's `main`, after the environment is read and the frame limit set from it (an
    /// unusable limit leaves the default here; `master` and `serve` refuse it in `validate`).
    static func main() async {
        Framing.use(maxFrame: (try? processEnvironment.maxFrame()) ?? Framing.defaultMaxFrame)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    static let configuration = CommandConfiguration(
        abstract: "Crash- and lag-report symbolication service.",
        version: StacklineVersion.description,
        // One subcommand per line, so branches adding commands merge cleanly.
        subcommands: [
            SubmitCommand.self,
            StatusCommand.self,
            MasterCommand.self,
            ReportCommand.self,
            SymbolsCommand.self,
            LookupCommand.self,
            GroupsCommand.self,
            GroupCommand.self,
            ReleasesCommand.self,
            ReportsCommand.self,
            FacetsCommand.self,
            ParseCommand.self,
            PruneCommand.self,
            ReprocessCommand.self,
            ServeCommand.self,
            TokensCommand.self,
            NamespacesCommand.self,
            WorkersCommand.self,
            AlertsCommand.self,
            QueueBenchCommand.self,
            DbCommand.self,
        ])
}

extension StacklineEnvironment {
    /// What this environment sets for debug files arriving at the store.
    var storeLimits: StoreLimits {
        StoreLimits(unpackMaxBytes: unpackMaxBytes, uploadMaxBytes: uploadMaxBytes, temporaryDirectory: temporaryDirectory)
    }
}
