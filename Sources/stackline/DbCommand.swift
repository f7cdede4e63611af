import ArgumentParser
import Foundation
import JSONFormat
import Storage

/// `stackline db`: keeping an installation (docs/backup.md).
struct DbCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Back up and check the database.",
        subcommands: [DbBackupCommand.self, DbCheckCommand.self])
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
        let db = try database.openSQLite(for: "db check")
        let check = try db.check()
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
