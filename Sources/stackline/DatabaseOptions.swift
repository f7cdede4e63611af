import ArgumentParser
import Foundation
import Storage

/// `--db PATH` (else `$STACKLINE_DB`, else `./data/stackline.sqlite`), shared by every command that uses the queue.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("db"), help: "Job database (default: $STACKLINE_DB or ./data/stackline.sqlite).")
    var path: String?

    var resolvedPath: String { DatabaseLocation.resolve(option: path, variable: processEnvironment.database) }

    /// True when there is a database to read.
    var exists: Bool { FileManager.default.fileExists(atPath: resolvedPath) }

    /// Opens the database, creating it (and its folder) if needed: only `submit` and `master`,
    /// which put work into it, may do that.
    func openOrCreate() throws -> ServiceDatabase {
        try ServiceDatabase(path: resolvedPath)
    }

    /// Opens an existing database. Every command that only reads or tidies the queue uses this:
    /// creating an empty database would make a mistyped `--db` look like an empty service.
    func open(for command: String) throws -> ServiceDatabase {
        guard exists else {
            throw fail("stackline \(command): no database at \(resolvedPath) (run `stackline submit` first, or pass --db)")
        }
        return try ServiceDatabase(path: resolvedPath)
    }
}
