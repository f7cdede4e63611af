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
            var type: String
            var path: String
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

    @Test func workerTargetReachesNeitherStorageNorGRDB() throws {
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
    @Test func cliTargetReachesStorageAndGRDB() throws {
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

    /// What each module may touch is what Package.swift declares: a file that imports a module of
    /// this package its target does not list would let the graph above miss an edge.
    @Test func everyImportIsADeclaredDependency() throws {
        let package = try Self.packageDescription.get()
        let names = Set(package.targets.map(\.name))
        var undeclared: [String] = []
        for target in package.targets where target.type != "plugin" && target.type != "system-target" {
            let declared = Set((target.targetDependencies ?? []) + (target.productDependencies ?? []))
            let folder = target.path.hasPrefix(TestPaths.packageRoot + "/") ? String(target.path.dropFirst(TestPaths.packageRoot.count + 1)) : target.path
            for file in try swiftSourceFiles(in: [folder]) {
                for line in file.text.split(separator: "\n") {
                    let words = line.split(separator: " ").filter { !$0.hasPrefix("@") && !["public", "internal", "private", "package"].contains($0) }
                    guard words.count >= 2, words[0] == "import" else { continue }
                    let module = String(words[1])
                    if names.contains(module), module != target.name, !declared.contains(module) {
                        undeclared.append("\(file.path): import \(module) (not a dependency of \(target.name))")
                    }
                }
            }
        }
        #expect(undeclared == [], "\(undeclared.joined(separator: "\n"))")
        // The scan saw the imports it should: Server imports Storage, which it declares.
        #expect(try Self.closure(of: "Server").targets.contains("Storage"))
    }

    /// The layers point down. Reading, symbolicating and grouping know nothing of the service;
    /// the answers a client decodes and the client itself link no server and no database;
    /// HTTP serving is Server's alone, SQL is Storage's alone.
    @Test func layersPointDownward() throws {
        let service: Set<String> = ["Storage", "Master", "Intake", "Server", "Alerts", "WebView", "Presentation", "ServiceRuntime"]
        let serverProducts: Set<String> = ["Hummingbird", "HummingbirdCore", "HummingbirdTLS", "NIOSSL", "GRDB"]
        let symbolLayer = [
            "JSONFormat", "ReportModel", "SystemCalls", "Compression", "Hashing", "Demangling", "DebugInfo", "SymbolCache",
            "SymbolStore", "Symbolication", "SymbolFetch", "ReportFormats", "ReportRendering", "Grouping", "ReportQuery", "Unwinding",
        ]
        for module in symbolLayer {
            let closure = try Self.closure(of: module)
            #expect(closure.targets.isDisjoint(with: service), "\(module) reaches \(closure.targets.intersection(service).sorted())")
            #expect(closure.products.isDisjoint(with: serverProducts), "\(module) reaches \(closure.products.intersection(serverProducts).sorted())")
        }
        for client in ["APIModel", "ServiceClient", "WorkerProtocol"] {
            let closure = try Self.closure(of: client)
            #expect(closure.targets.isDisjoint(with: service), "\(client) reaches \(closure.targets.intersection(service).sorted())")
            #expect(closure.products.isDisjoint(with: serverProducts), "\(client) reaches \(closure.products.intersection(serverProducts).sorted())")
        }
        let runtime = try Self.closure(of: "ServiceRuntime")
        #expect(runtime.targets.isDisjoint(with: ["Storage", "Master", "Server"]))
        // Direct uses: only Server serves HTTP and only Storage speaks SQL (tests of each aside).
        let package = try Self.packageDescription.get()
        for target in package.targets where target.type != "test" {
            let products = Set(target.productDependencies ?? [])
            if !products.isDisjoint(with: ["Hummingbird", "HummingbirdCore", "HummingbirdTLS"]) {
                #expect(target.name == "Server", "\(target.name) depends on Hummingbird")
            }
            if products.contains("GRDB") { #expect(target.name == "Storage", "\(target.name) depends on GRDB") }
        }
        // The walk is not vacuous: the CLI reaches the whole service, Server reaches Hummingbird.
        #expect(try Self.closure(of: "stackline").targets.isSuperset(of: service))
        #expect(try Self.closure(of: "Server").products.contains("Hummingbird"))
    }

    /// One test target per module, named after it (`<Module>Tests`, testing that module), besides
    /// the three tiers that cut across modules: agreement with other tools, whole processes, and
    /// these fitness checks.
    @Test func testTargetsAreNamedAfterTheirModule() throws {
        let package = try Self.packageDescription.get()
        let tiers: Set<String> = ["AccuracyTests", "EndToEndTests", "ModuleGraphTests"]
        let modules = Set(package.targets.filter { $0.type == "library" || $0.type == "executable" }.map(\.name))
        var misnamed: [String] = []
        for target in package.targets where target.type == "test" && !tiers.contains(target.name) {
            let module = String(target.name.dropLast("Tests".count))
            guard target.name.hasSuffix("Tests"), modules.contains(module), (target.targetDependencies ?? []).contains(module) else {
                misnamed.append(target.name)
                continue
            }
        }
        #expect(misnamed == [], "test targets not named after a module they test: \(misnamed)")
        #expect(package.targets.contains { $0.name == "StorageTests" && $0.type == "test" })
    }
}
