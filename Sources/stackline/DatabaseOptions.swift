import ArgumentParser
import JobQueue

/// `--db PATH` (else `$STACKLINE_DB`, else `./data/stackline.sqlite`), shared by every command that uses the queue.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("db"), help: "Job database (default: $STACKLINE_DB or ./data/stackline.sqlite).")
    var path: String?

    var resolvedPath: String { DatabaseLocation.resolve(option: path) }

    func open() throws -> JobDatabase {
        try JobDatabase(path: resolvedPath)
    }
}
