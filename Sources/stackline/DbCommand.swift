import ArgumentParser
import Foundation
import JSONFormat
import ReportModel
import Storage

/// `stackline db`: keeping an installation (docs/backup.md).
struct DbCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Back up, check and move the database.",
        subcommands: [DbBackupCommand.self, DbCheckCommand.self, DbCopyCommand.self])
}

/// `stackline db copy --from PATH --to postgres://…`: a SQLite installation moved to PostgreSQL.
struct DbCopyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Copy every table of a SQLite database (live or stopped) into a PostgreSQL database.",
        discussion: """
            The SQLite file is read in one transaction, so a serve writing meanwhile is copied as of \
            one commit; the copy is one PostgreSQL transaction, kept only when every table has as \
            many rows on both sides. Ids are kept. A target that already holds reports is refused \
            unless --replace is given, which empties it first: run it again that way to copy a live \
            database once more before switching serve over (docs/scaling.md). The password comes \
            from STACKLINE_DB_PASSWORD or STACKLINE_DB_PASSWORD_FILE, never from the URL.
            """)

    @Option(help: "The SQLite database to copy (a path, or sqlite:PATH).")
    var from: String

    @Option(help: "The PostgreSQL database to copy into: postgres://USER@HOST:PORT/DB.")
    var to: String

    @Flag(help: "Empty the target first, even when it holds reports.")
    var replace = false

    @Flag(help: "Machine-readable output.")
    var json = false

    func validate() throws {
        guard PostgresURL.isPostgres(to) else { throw ValidationError("--to must be a postgres:// URL") }
        if PostgresURL.hasPassword(to) {
            throw ValidationError("--to: a password in the URL would show in the process list; use STACKLINE_DB_PASSWORD or STACKLINE_DB_PASSWORD_FILE")
        }
    }

    func run() throws {
        let path = from.hasPrefix("sqlite:") ? String(from.dropFirst("sqlite:".count)) : from
        guard !PostgresURL.isPostgres(path), FileManager.default.fileExists(atPath: path) else {
            throw fail("stackline db copy: no SQLite database at \(path)")
        }
        let source = try ServiceDatabase(path: path)
        let target = try PostgresDatabase(url: to, password: try processEnvironment.databasePasswordValue())
        let copied: [CopiedTable]
        do { copied = try source.copy(to: target, replace: replace) } catch let error as DatabaseCopyError {
            throw fail("stackline db copy: \(error.description)")
        }
        if json {
            print(try encodeJSON(copied))
        } else {
            for table in copied { printLine("\(table.table)\t\(table.source)\t\(table.target)") }
            // Counts read from the file: summed checked, as every sum of counts from outside is.
            let rows = copied.map(\.source).checkedSum().map(String.init) ?? "more than \(Int.max)"
            printLine("copied \(rows) rows of \(copied.count) tables into \(PostgresURL.redacted(to)); every table's count matches")
        }
    }
}

/// `stackline db backup DEST`: a consistent copy while `serve` runs and writes.
struct DbBackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the whole database to a new file, consistently, while serve runs and writes.",
        discussion: """
            SQLite's online backup, read in one transaction: the copy is the database as of one \
            commit, never a torn one (copying the file of a database in WAL mode can be). The copy \
            is a database of its own: restore it by stopping serve and putting it in place, or by \
            pointing --db at it. DEST must not exist.
            """)

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "The new file to write.")
    var destination: String

    @Flag(help: "Machine-readable output.")
    var json = false

    func run() throws {
        let db = try database.openSQLite(for: "db backup")
        let counts = try db.backup(to: destination)
        if json {
            print(try encodeJSON(counts))
        } else {
            printLine("backed up to \(destination): \(counts.reports) reports, \(counts.results) results, \(counts.groups) groups")
        }
    }
}

/// `stackline db check`: the file's integrity and the ledger's invariants.
struct DbCheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check the database file and the group ledger (a group's counts are its reports').",
        discussion: "Exit status 1 when a problem is found; each is printed on its own line.")

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Machine-readable output.")
    var json = false

    func run() throws {
        // SQLite's file checks and the ledger's; on PostgreSQL the ledger's (docs/backup.md).
        let check = database.isPostgres ? try database.openPostgres().check() : try database.openSQLite(for: "db check").check()
        if json {
            print(try encodeJSON(check))
        } else {
            print("\(check.counts.reports) reports, \(check.counts.results) results, \(check.counts.groups) groups")
            for problem in check.problems { printLine("problem: \(problem)") }
            print(check.isSound ? "ok" : "\(check.problems.count) problems")
        }
        if !check.isSound { throw ExitCode(1) }
    }
}
