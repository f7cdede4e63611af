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

/// Prints to stderr (ArgumentParser owns stdout for results).
func printError(_ message: String) {
    var stderr = StandardError()
    print(message, to: &stderr)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileHandle.standardError.write(Data(string.utf8))
    }
}

import Foundation
