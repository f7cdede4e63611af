import ArgumentParser
import Foundation
import SymbolStore

/// `stackline symbols …`: the debug-file store.
struct SymbolsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "symbols",
        abstract: "Add, list, show and remove debug files in the store.",
        subcommands: [Add.self, List.self, Show.self, Remove.self, Missing.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store ELF files by build-id and Mach-O files, dSYM bundles and zips of them by UUID.")
        @OptionGroup var options: StoreOptions
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "Files or directories to add.") var paths: [String]

        func run() throws {
            let store = options.store
            var refused = 0
            var added: [String] = []
            defer { requeueReports(missing: added) }
            for path in paths {
                for (file, result) in store.addTree(path: path) {
                    switch result {
                    case .success(.stored(let e)):
                        added.append(e.buildId.hex)
                        printLine("stored   \(e.buildId)  \(e.name)  (\(Self.describe(e)))")
                    case .success(.upgraded(let e)):
                        added.append(e.buildId.hex)
                        printLine("upgraded \(e.buildId)  \(e.name)  (\(Self.describe(e)))")
                    case .success(.kept(let e, let reason)):
                        added.append(e.buildId.hex)
                        printLine("kept     \(e.buildId)  \((file as NSString).lastPathComponent): \(reason)")
                    case .failure(let error):
                        refused += 1
                        printError("stackline symbols add: refused \(error)")
                    }
                }
            }
            if refused > 0 { throw ExitCode(1) }
        }

        /// Reports processed while these debug files were missing go back on the queue at low
        /// priority; the master regroups them. Without a job database there is nothing to do.
        private func requeueReports(missing ids: [String]) {
            guard !ids.isEmpty, FileManager.default.fileExists(atPath: database.resolvedPath) else { return }
            do {
                let queued = try database.open().requeueReports(missing: ids)
                if !queued.isEmpty {
                    print("requeued \(queued.count) report\(queued.count == 1 ? "" : "s") that lacked these debug files (run `stackline master` to reprocess)")
                }
            } catch {
                printError("stackline symbols add: stored, but could not requeue reports in \(database.resolvedPath): \(error)")
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
            print(pad("BUILD-ID", 42) + pad("NAME", 28) + pad("ARCH", 8) + pad("SIZE", 11) + pad("DWARF", 6) + pad("SYMTAB", 7) + "ADDED")
            for e in entries {
                print(pad(e.buildId.hex, 42) + pad(e.name, 28) + pad(e.arch.name, 8) + pad(String(e.size), 11)
                    + pad(e.hasDWARF ? "yes" : "no", 6) + pad(e.hasSymbolTable ? "yes" : "no", 7)
                    + ISO8601DateFormatter().string(from: e.addedAt))
            }
        }

    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one stored debug file.")
        @OptionGroup var options: StoreOptions
        @Argument(help: "Build-id (hex).") var buildID: String

        func run() throws {
            guard let entry = (try? SymbolStoreDirectory.buildID(buildID)).flatMap({ options.store.entry(buildID: $0) }) else {
                throw fail("stackline symbols show: no debug file for build-id \(buildID) in the store")
            }
            print(try encodeJSON(entry))
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove one stored debug file.")
        @OptionGroup var options: StoreOptions
        @Argument(help: "Build-id (hex).") var buildID: String

        func run() throws {
            do {
                let removed = try options.store.remove(buildID: SymbolStoreDirectory.buildID(buildID))
                printLine("removed  \(removed.buildId)  \(removed.name)")
            } catch {
                throw fail("stackline symbols rm: \(error.description)")
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
            let store = options.store
            let missing = try database.open().missingSymbols { id in (try? SymbolStoreDirectory.buildID(id)).flatMap { store.entry(buildID: $0) } != nil }
            if json {
                print(try encodeJSON(missing))
                return
            }
            if missing.isEmpty {
                print("no missing debug files")
                return
            }
            print(pad("BUILD-ID", 42) + pad("IMAGE", 28) + pad("REPORTS", 8) + "LAST SEEN")
            for m in missing {
                print(pad(m.buildId, 42) + pad(m.imageName ?? "?", 28) + pad(String(m.reportCount), 8)
                    + ISO8601DateFormatter().string(from: m.lastSeen))
            }
        }
    }
}

func encodeJSON<T: Encodable>(_ value: T) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    encoder.dateEncodingStrategy = .iso8601
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}
