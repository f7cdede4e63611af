import Foundation
import TestSupport
import Testing

/// A worker must never touch the job database, so `stackline-worker` must not depend on
/// Storage or GRDB, not even through another module. Checked twice, from outside our code:
/// the target graph as SwiftPM reads it (`swift package describe`), and the linked binary
/// (`readelf`, `nm`).
@Suite struct ModuleGraphTests {
    /// Targets and products no worker may reach.
    static let forbiddenTargets: Set<String> = ["Storage", "Master"]
    static let forbiddenProducts: Set<String> = ["GRDB"]

    /// The parts of `swift package describe --type json` the walk needs.
    struct PackageDescription: Decodable {
        struct Target: Decodable {
            var name: String
            var targetDependencies: [String]?
            var productDependencies: [String]?
        }
        var targets: [Target]
    }

    /// Everything `root` depends on, directly or not: targets of this package and products of others.
    struct Closure {
        var targets: Set<String> = []
        var products: Set<String> = []
    }

    static let packageDescription: Result<PackageDescription, any Error> = Result {
        // Its own scratch path: the `swift test` running us holds the lock on `.build`.
        let scratch = try TempDirectory("module-graph")
        defer { scratch.remove() }
        let out = try runProcess(
            try findTool("swift"),
            ["package", "--package-path", TestPaths.packageRoot, "--scratch-path", scratch.path, "describe", "--type", "json"],
            timeout: 300)
        guard out.succeeded else { throw TestSupportError(out.summary) }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(PackageDescription.self, from: Data(out.stdout.utf8))
    }

    static func closure(of root: String) throws -> Closure {
        let package = try packageDescription.get()
        let byName = Dictionary(package.targets.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        guard byName[root] != nil else { throw TestSupportError("no target \(root) in Package.swift") }
        var closure = Closure()
        var pending = [root]
        while let name = pending.popLast() {
            guard let target = byName[name] else { continue }
            closure.products.formUnion(target.productDependencies ?? [])
            for dependency in target.targetDependencies ?? [] where closure.targets.insert(dependency).inserted {
                pending.append(dependency)
            }
        }
        return closure
    }

    @Test func workerTargetReachesNeitherJobQueueNorGRDB() throws {
        let worker = try Self.closure(of: "stackline-worker")
        #expect(worker.targets.isDisjoint(with: Self.forbiddenTargets), "worker reaches \(worker.targets.intersection(Self.forbiddenTargets).sorted())")
        #expect(worker.products.isDisjoint(with: Self.forbiddenProducts), "worker reaches \(worker.products.intersection(Self.forbiddenProducts).sorted())")
        // It does speak the protocol and symbolicate: the walk found its real dependencies.
        #expect(worker.targets.isSuperset(of: ["WorkerProtocol", "ReportModel", "Symbolication"]))
        // SystemCalls (with only glibc's malloc.h beside it) gives frame I/O errors their errno text;
        // Compression (zlib, libdeflate; zstd and xz for debug sections) makes results in the form
        // the database stores them.
        #expect(
            try Self.closure(of: "WorkerProtocol").targets
                == ["ReportModel", "JSONFormat", "SystemCalls", "StacklineMalloc", "Compression", "StacklineZlib", "StacklineDeflate", "StacklineZstd", "StacklineLzma"])
    }

    /// The same walk from the CLI finds both, so the check above is not vacuous.
    @Test func cliTargetReachesJobQueueAndGRDB() throws {
        let cli = try Self.closure(of: "stackline")
        #expect(cli.targets.isSuperset(of: ["Storage", "Master", "WorkerProtocol"]))
        #expect(cli.products.contains("GRDB"))
    }

    /// What the linker put in a binary: its shared libraries (`DT_NEEDED`) and its symbol names.
    struct Linked {
        var libraries: [String]
        var symbols: [Substring]

        init(_ binary: String) throws {
            let dynamic = try runProcess(try findTool("readelf"), ["--dynamic", "--wide", binary])
            guard dynamic.succeeded else { throw TestSupportError(dynamic.summary) }
            libraries = dynamic.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }.map(String.init)
            let names = try runProcess(try findTool("nm"), [binary])
            guard names.succeeded else { throw TestSupportError(names.summary) }
            symbols = names.stdout.split(separator: "\n")
        }

        /// Swift symbols of `module`: their mangled names start `$s<length><module>`.
        func symbols(of module: String) -> Int {
            let prefix = "$s\(module.utf8.count)\(module)"
            return symbols.filter { $0.contains(prefix) }.count
        }

        var needsSQLite: Bool { libraries.contains { $0.contains("libsqlite3") } }
    }

    @Test func workerBinaryLinksNoSQLiteAndNoQueueCode() throws {
        let worker = try Linked(TestPaths.worker)
        let cli = try Linked(TestPaths.stackline)
        // Plain values, so a failure prints them and not every symbol of the binary.
        let workerNeedsSQLite = worker.needsSQLite, cliNeedsSQLite = cli.needsSQLite
        #expect(!workerNeedsSQLite, "stackline-worker needs libsqlite3")
        #expect(cliNeedsSQLite)
        for module in ["GRDB", "Storage", "Master"] {
            let inWorker = worker.symbols(of: module), inCLI = cli.symbols(of: module)
            #expect(inWorker == 0, "stackline-worker holds symbols of \(module)")
            // The CLI links them, so a zero above is not a broken `nm` or mangling prefix.
            #expect(inCLI > 0, "stackline has no symbols of \(module)")
        }
        let protocolSymbols = worker.symbols(of: "WorkerProtocol")
        #expect(protocolSymbols > 0)
    }
}
