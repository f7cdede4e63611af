import ArgumentParser
import Foundation
import Queries
import ReportModel
import SymbolStore

/// `stackline symbols …`: the debug-file store.
struct SymbolsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "symbols",
        abstract: "Add, list, show and remove debug files in the store.",
        subcommands: [Add.self, List.self, Show.self, Remove.self, Missing.self, Upload.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store ELF files by build-id and Mach-O files, dSYM bundles and zips of them by UUID.",
            discussion: """
                A directory is walked and files that are not debug files (neither ELF, Mach-O nor \
                zip) are skipped and counted, so a whole build folder can be added. A file named \
                on the command line must be a debug file. Ends with one summary line; the exit \
                status is 1 when a file was refused (a damaged ELF or Mach-O file, say). The \
                summary line is left out when a single file is named.
                """)
        @OptionGroup var options: StoreOptions
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "Files or directories to add.") var paths: [String]
        @Flag(help: "Machine-readable output.") var json = false

        func run() throws {
            let store = options.store
            var report = AddReport()
            var skipped: [String] = []
            for path in paths {
                for (file, result) in store.addTree(path: path, skipped: &skipped) {
                    report.record(path: file, result: result)
                    switch result {
                    case .success(.stored(let e)):
                        if !json { printLine("stored   \(e.buildId)  \(e.name)  (\(Self.describe(e)))") }
                    case .success(.upgraded(let e)):
                        if !json { printLine("upgraded \(e.buildId)  \(e.name)  (\(Self.describe(e)))") }
                    case .success(.kept(let e, let reason)):
                        if !json { printLine("kept     \(e.buildId)  \((file as NSString).lastPathComponent): \(reason)") }
                    case .failure(let error):
                        printError("stackline symbols add: refused \(error)")
                    }
                }
            }
            report.skipped = skipped
            report.summary.skipped = skipped.count
            report.requeuedReportIds = requeueReports(missing: report.buildIds)
            let requeued = report.requeuedReportIds
            if json {
                print(try encodeJSON(report))
            } else {
                if !requeued.isEmpty {
                    print("requeued \(requeued.count) report\(requeued.count == 1 ? "" : "s") that lacked these debug files (run `stackline master` to reprocess)")
                }
                // One named file is its own summary (its line above, or its refusal on stderr).
                var isDirectory: ObjCBool = false
                if paths.count != 1 || (FileManager.default.fileExists(atPath: paths[0], isDirectory: &isDirectory) && isDirectory.boolValue) {
                    print(report.summary.line)
                }
            }
            if report.summary.refused > 0 { throw ExitCode(1) }
        }

        /// Reports processed while these debug files were missing go back on the queue at low
        /// priority; the master regroups them. Without a job database there is nothing to do
        /// (and none is created).
        private func requeueReports(missing ids: [String]) -> [Int64] {
            guard !ids.isEmpty, database.exists else { return [] }
            do {
                return try database.open(for: "symbols add").requeueReports(missing: ids)
            } catch {
                printError("stackline symbols add: stored, but could not requeue reports in \(database.resolvedPath): \(error)")
                return []
            }
        }

        static func describe(_ e: StoredDebugFile) -> String {
            var parts = [e.arch.name, e.kind]
            parts.append(e.hasDWARF ? "DWARF" : "no DWARF")
            parts.append(e.hasSymbolTable ? "symtab" : "no symtab")
            return parts.joined(separator: ", ")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List stored debug files.")
        @OptionGroup var options: StoreOptions
        @Flag(help: "Machine-readable output.") var json = false

        func run() throws {
            let entries = options.store.list()
            if json {
                print(try encodeJSON(entries))
                return
            }
            if entries.isEmpty {
                print("no debug files in \(options.store.root)")
                return
            }
            var table = Table("BUILD-ID", "NAME", "ARCH", "SIZE", "DWARF", "SYMTAB", "ADDED")
            for e in entries {
                table.add(
                    e.buildId.hex, e.name, e.arch.name, String(e.size), e.hasDWARF ? "yes" : "no", e.hasSymbolTable ? "yes" : "no",
                    e.addedAt.rfc3339)
            }
            print(table.render())
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one stored debug file.")
        @OptionGroup var options: StoreOptions
        @Argument(help: "Build-id or UUID (hex), or a unique prefix of it.") var buildID: String
        @Flag(help: "Machine-readable output.") var json = false

        func run() throws {
            let entry: StoredDebugFile
            do throws(StoreError) {
                let id = try options.store.resolve(prefix: buildID)
                guard let found = options.store.entry(buildID: id) else { throw .notFound(buildID: id) }
                entry = found
            } catch {
                throw fail("stackline symbols show: \(error.description)")
            }
            if json {
                print(try encodeJSON(entry))
                return
            }
            var lines = [
                ("build-id", entry.buildId.hex), ("name", entry.name), ("format", entry.format ?? "elf"), ("arch", entry.arch.name),
                ("kind", entry.kind), ("size", String(entry.size)), ("DWARF", entry.hasDWARF ? "yes" : "no"),
                ("symbol table", entry.hasSymbolTable ? "yes" : "no"), ("added", entry.addedAt.rfc3339),
                ("source", entry.source), ("debug file", entry.path),
            ]
            if let exe = entry.executablePath { lines.append(("executable", exe)) }
            for (key, value) in lines { printLine("\(key)\t\(value)") }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove one stored debug file.")
        @OptionGroup var options: StoreOptions
        @Argument(help: "Build-id or UUID (hex), or a unique prefix of it.") var buildID: String
        @Flag(help: "Machine-readable output: the removed entry.") var json = false

        func run() throws {
            let removed: StoredDebugFile
            do throws(StoreError) { removed = try options.store.remove(buildID: options.store.resolve(prefix: buildID)) } catch {
                throw fail("stackline symbols rm: \(error.description)")
            }
            if json {
                print(try encodeJSON(removed))
            } else {
                printLine("removed  \(removed.buildId)  \(removed.name)")
            }
        }
    }
}

extension SymbolsCommand {
    /// `stackline symbols missing`: what a build machine should upload next.
    struct Missing: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List build ids that processed reports needed and the store lacks, most-needed first.")
        @OptionGroup var options: StoreOptions
        @OptionGroup var database: DatabaseOptions
        @Flag(help: "Machine-readable output.") var json = false

        func run() throws {
            let missing = try missingDebugFiles(db: database.open(for: "symbols missing"), store: options.store)
            if json {
                print(try encodeJSON(missing))
                return
            }
            if missing.isEmpty {
                print("no missing debug files")
                return
            }
            var table = Table("BUILD-ID", "IMAGE", "REPORTS", "LAST SEEN")
            for m in missing { table.add(m.buildId, m.imageName ?? "?", String(m.reportCount), m.lastSeen.rfc3339) }
            print(table.render())
        }
    }
}
