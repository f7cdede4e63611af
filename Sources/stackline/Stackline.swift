import ArgumentParser

@main
struct Stackline: AsyncParsableCommand {
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
            ParseCommand.self,
            PruneCommand.self,
            ServeCommand.self,
            TokensCommand.self,
            NamespacesCommand.self,
            WorkersCommand.self,
            AlertsCommand.self,
            QueueBenchCommand.self,
        ])
}
