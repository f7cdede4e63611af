import ArgumentParser

@main
struct Stackline: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Crash- and lag-report symbolication service.",
        subcommands: [
            SymbolsCommand.self,
            LookupCommand.self,
        ])
}
