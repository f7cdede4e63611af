import ArgumentParser
import Foundation
import Storage

/// `--db PATH|URL` (else `$STACKLINE_DB`, else `./data/stackline.sqlite`), shared by every
/// command that uses the database: a SQLite file, or a PostgreSQL database named by a
/// `postgres://` URL (its password from `STACKLINE_DB_PASSWORD` or `STACKLINE_DB_PASSWORD_FILE`,
/// never from the command line; docs/scaling.md).
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("db"),
        help: "Database: a SQLite file, or postgres://USER@HOST:PORT/DB (default: $STACKLINE_DB or ./data/stackline.sqlite).")
    var path: String?

    var resolvedPath: String { DatabaseLocation.resolve(option: path, variable: processEnvironment.database) }

    /// The location as messages may show it (a PostgreSQL URL's password, if any, replaced).
    var shownLocation: String { PostgresURL.redacted(resolvedPath) }

    var isPostgres: Bool { PostgresURL.isPostgres(resolvedPath) }

    /// True when there is a database to read. A PostgreSQL database is there if it answers,
    /// which opening it checks.
    var exists: Bool { isPostgres || FileManager.default.fileExists(atPath: resolvedPath) }

    /// Opens the database, creating it (and its folder) if needed: only the commands that put
    /// work into it may do that. A PostgreSQL database must exist; its tables are created.
    func openOrCreate() throws -> any ServiceStore {
        if isPostgres { return try openPostgres() }
        return try ServiceDatabase(path: resolvedPath)
    }

    /// Opens an existing database. Every command that only reads or tidies the queue uses this:
    /// creating an empty database would make a mistyped `--db` look like an empty service.
    func open(for command: String) throws -> any ServiceStore {
        if isPostgres { return try openPostgres() }
        return try openSQLite(for: command)
    }

    /// The SQLite file itself, for the commands that work on the file (`db backup`, `db check`).
    func openSQLite(for command: String) throws -> ServiceDatabase {
        if isPostgres {
            throw fail("stackline \(command): works on a SQLite database; for PostgreSQL see docs/backup.md (pg_dump, base backups)")
        }
        guard exists else {
            throw fail("stackline \(command): no database at \(resolvedPath) (run `stackline submit` first, or pass --db)")
        }
        return try ServiceDatabase(path: resolvedPath)
    }

    /// The PostgreSQL database itself, for the commands that need its own checks.
    func openPostgres() throws -> PostgresDatabase {
        if PostgresURL.hasPassword(resolvedPath), path != nil {
            throw ValidationError(
                "--db: a password in the URL is readable by every user of this machine; "
                    + "give it in STACKLINE_DB_PASSWORD or STACKLINE_DB_PASSWORD_FILE")
        }
        return try PostgresDatabase(url: resolvedPath, password: try processEnvironment.databasePasswordValue())
    }
}
