import ArgumentParser
import Foundation
import APIModel
import JSONFormat
import Presentation
import ReportModel
import SymbolStore
import Symbolication

/// `stackline symbols …`: the debug-file store.
struct SymbolsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "symbols",
        abstract: "Add, list, show, remove and verify debug files in the store.",
        subcommands: [Add.self, List.self, Show.self, Remove.self, Missing.self, Upload.self, Reindex.self, Verify.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store ELF files by build-id and Mach-O files, dSYM bundles and zips of them by UUID.",
            discussion: """
                A directory is walked and files that are not debug files (neither ELF, Mach-O nor \
                zip) are skipped and counted, so a whole build folder can be added. A file named \
                on the command line must be a debug file. Ends with one summary line; the exit \
                status is 1 when a file was refused (a damaged ELF or Mach-O file, say). The \
                summary line is left out when a single file is named. Each file stored gets its \
                symcache (the lookup index beside it) unless --no-index is given; workers build \
                a missing one on first use.
                """)
        @OptionGroup var options: StoreOptions
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "Files or directories to add.") var paths: [String]
        @Flag(help: "Machine-readable output.") var json = false
        @Flag(name: .customLong("no-index"), help: "Do not build symcaches now (workers build them when first needed).")
        var noIndex = false

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
            if !noIndex { Reindex.index(store: store, ids: report.buildIds, onlyWhenUnusable: true) }
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
        private func requeueReports(missing ids: [BuildID]) -> [Int64] {
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
            let symcache = options.store.symbolCachePath(buildID: entry.buildId)
            lines.append(("symcache", FileManager.default.fileExists(atPath: symcache) ? symcache : "none (built on first use, or by `symbols reindex`)"))
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
    /// `stackline symbols reindex`: rebuild symcaches.
    struct Reindex: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Build the symcaches (lookup indexes) of stored debug files again.",
            discussion: """
                Every stored debug file, or the ones named. A symcache of another format version, \
                built from another file, or damaged is rebuilt on its own the first time it is \
                needed; this does it now. Exit status 1 when one could not be built.
                """)
        @OptionGroup var options: StoreOptions
        @Argument(help: "Build-ids or UUIDs (hex), or unique prefixes; none: every stored file.") var buildIDs: [String] = []
        @Flag(help: "Print nothing but errors.") var quiet = false
        @Flag(name: .customLong("only-unusable"), help: "Only those without a usable symcache (missing, stale, damaged, another version).")
        var onlyUnusable = false

        func run() throws {
            var ids: [BuildID] = []
            for text in buildIDs {
                do throws(StoreError) { ids.append(try options.store.resolve(prefix: text)) } catch {
                    throw fail("stackline symbols reindex: \(error.description)")
                }
            }
            if buildIDs.isEmpty { ids = options.store.list().map(\.buildId) }
            if !Self.index(store: options.store, ids: ids, verbose: !quiet, onlyWhenUnusable: onlyUnusable) { throw ExitCode(1) }
        }

        /// Builds the symcache of each id in `ids` (`onlyWhenUnusable`: unless a usable one is
        /// there already); false when one failed (said on stderr).
        @discardableResult
        static func index(store: SymbolStoreDirectory, ids: [BuildID], verbose: Bool = false, onlyWhenUnusable: Bool = false) -> Bool {
            var ok = true
            let cache = OpenDebugFiles(
                stores: [store], capacity: 1,
                warn: { warning in
                    // Only a failed build matters here: a stale symcache is the reason for the call.
                    if case .notWritten = warning {
                        printError("stackline symbols: \(warning)")
                        ok = false
                    }
                })
            for id in Set(ids).sorted() {
                let start = DispatchTime.now().uptimeNanoseconds
                do throws(LookupError) {
                    if onlyWhenUnusable {
                        _ = try cache.source(buildID: id)
                        continue
                    }
                    let path = try cache.rebuildSymbolCache(buildID: id)
                    if verbose {
                        let ms = (DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
                        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                        printLine("indexed  \(id)  \(bytes) bytes  \(ms) ms")
                    }
                } catch {
                    printError("stackline symbols: \(error.description)")
                    ok = false
                }
            }
            return ok
        }
    }

    /// `stackline symbols missing`: what a build machine should upload next.
    struct Missing: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List build ids that processed reports needed and could not use, most-needed first.",
            discussion: """
                Each with its status (notFound: no store holds it; symbolTableOnly: the stored file has no line \
                tables, add the one that has; unreadable or wrongArchitecture: the stored file cannot be used, \
                remove it with `symbols rm` and add the right one), the reports and groups it blocks, and the \
                last answer of each symbol source.
                """)
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
            var table = Table("BUILD-ID", "IMAGE", "STATUS", "REPORTS", "GROUPS", "LAST SEEN", "SOURCES")
            for m in missing {
                let sources = (m.sources ?? []).map { "\($0.source): \($0.outcome.rawValue)" }.joined(separator: "; ")
                table.add(
                    m.file.buildID.hex, m.file.imageName ?? "?", m.file.status.rawValue, String(m.reportCount), String(m.groupCount),
                    m.lastSeen.rfc3339, sources.isEmpty ? "-" : sources)
            }
            print(table.render())
            // Why a stored file is not used: a line each, under the table.
            for m in missing where m.file.status != .notFound {
                printLine("\(m.file.buildID.hex): \(m.file.status.rawValue): \(m.file.detail ?? "")")
            }
        }
    }
}
