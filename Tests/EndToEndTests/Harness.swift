import Foundation
import Storage
import TestSupport
import Testing

/// A temp data directory plus helpers to drive the real `stackline` binaries against it.
final class Harness {
    /// `serve` for the minidump, core and Crashpad suites: one worker, and a parse deadline
    /// (default 10 s) no debug build misses on a loaded 2-core machine, since a dump's stacks
    /// are scanned when it is parsed; the deadline itself is AttackTests+Isolation's to check.
    static let nativeDumpServer = ["--workers", "1", "--parse-timeout", "60"]

    /// `stackline-worker --connect url` with one slot on this host (RemoteWorkerHarness puts
    /// workers on network hosts of their own), its cache at `cache` (created by the worker), its
    /// working directory `<name>-cwd` and its output in `<name>.log` under the test's directory.
    /// The caller stops it.
    func startConnectedWorker(_ url: String, token: String, name: String, cache: String) throws -> Process {
        let cwd = dir.file("\(name)-cwd"), log = dir.file("\(name).log")
        try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestPaths.worker)
        process.arguments = ["--connect", url, "--token", token, "--slots", "1", "--cache", cache, "--name", name]
        process.currentDirectoryURL = URL(fileURLWithPath: cwd)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        return process
    }

    let dir: TempDirectory
    /// The database the processes share: a SQLite file, or a PostgreSQL URL (`backend`).
    let dbPath: String
    let backend: Backend
    let symbolsPath: String
    private var masters: [MasterProcess] = []
    /// Added to every process this harness starts (e.g. a smaller frame limit).
    var extraEnvironment: [String: String] = [:]

    /// `database`: a location of `backend` to use instead of a new one (a PostgreSQL database
    /// on a cluster of the test's own).
    init(backend: Backend = .sqlite, database: String? = nil) throws {
        dir = try TempDirectory("e2e")
        self.backend = backend
        dbPath = try database ?? backend.newDatabase(in: dir.path)
        symbolsPath = dir.file("symbols")
        try FileManager.default.createDirectory(atPath: symbolsPath, withIntermediateDirectories: true)
        guard FileManager.default.isExecutableFile(atPath: TestPaths.stackline),
            FileManager.default.isExecutableFile(atPath: TestPaths.worker)
        else {
            throw HarnessError.missingBinaries(TestPaths.buildDirectory)
        }
    }

    deinit {
        for master in masters where master.process.isRunning { kill(master.process.processIdentifier, SIGKILL) }
        dir.remove()
    }

    var environment: [String: String] {
        ["STACKLINE_DB": dbPath, "STACKLINE_TEST_HOOKS": "1", "STACKLINE_WORKER": TestPaths.worker]
            .merging(extraEnvironment) { $1 }
    }

    func database() throws -> ServiceDatabase { try ServiceDatabase(path: dbPath) }

    /// The database through the store's own code, whichever the backend.
    func store() throws -> any ServiceStore {
        switch backend {
        case .sqlite: try ServiceDatabase(path: dbPath)
        case .postgres: try PostgresDatabase(url: dbPath)
        }
    }

    /// `query`'s rows, read through the engine's own shell (`Backend.rows`).
    func sql(_ query: String) throws -> [[String: Any]] { try backend.rows(dbPath, query) }

    func sqlInt(_ query: String) throws -> Int { try backend.int(dbPath, query) }

    /// Writes reports to files under `subdir` and returns their paths.
    func write(_ reports: [Data], subdir: String = "in") throws -> [String] {
        let folder = dir.file(subdir)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return try reports.enumerated().map { i, data in
            let path = "\(folder)/report-\(String(format: "%05d", i)).json"
            try data.write(to: URL(fileURLWithPath: path))
            return path
        }
    }

    @discardableResult
    func stackline(_ arguments: [String], stdin: Data? = nil) throws -> ProcessOutput {
        try runProcess(TestPaths.stackline, arguments, environment: environment, stdin: stdin, timeout: 300)
    }

    /// `stackline submit`; returns the printed report ids.
    func submit(_ paths: [String]) throws -> [Int64] {
        let out = try stackline(["submit"] + paths)
        #expect(out.status == 0, "submit failed: \(out.stderr)")
        return out.stdout.split(separator: "\n").compactMap { Int64($0.split(separator: "\t").first ?? "") }
    }

    func startMaster(_ arguments: [String]) throws -> MasterProcess {
        let master = try MasterProcess(
            arguments: ["master", "--symbols", symbolsPath] + arguments, environment: environment,
            logPath: dir.file("master-\(masters.count).log"))
        masters.append(master)
        return master
    }

    /// Every master log so far, concatenated.
    var allLogs: String { masters.map(\.log).joined(separator: "\n") }

    /// Report ids in "job done" lines of every master log, one entry per line.
    var completions: [Int64] {
        allLogs.split(separator: "\n").filter { $0.contains("job done") }.compactMap { line in
            guard let range = line.range(of: #"report=(\d+)"#, options: .regularExpression) else { return nil }
            return Int64(line[range].dropFirst("report=".count))
        }
    }

    /// Polls `condition` until true; the timeout only guards against a hang.
    func waitUntil(_ what: String, timeout: Double = 240, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() {
            guard Date() < deadline else { throw HarnessError.timedOut(what, allLogs) }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }
}

/// A running `stackline master` whose stderr goes to a file.
final class MasterProcess {
    let process = Process()
    let logPath: String

    init(arguments: [String], environment: [String: String], logPath: String) throws {
        self.logPath = logPath
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: TestPaths.stackline)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: logPath)
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Waits for exit (the timeout only guards against a hang) and returns the exit status.
    func waitForExit(timeout: Double = 240) throws -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            guard Date() < deadline else {
                kill(pid, SIGKILL)
                throw HarnessError.timedOut("master exit", log)
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return process.terminationStatus
    }

    func signal(_ sig: Int32) { kill(pid, sig) }
}

enum HarnessError: Error, CustomStringConvertible {
    case missingBinaries(String)
    case timedOut(String, String)

    var description: String {
        switch self {
        case .missingBinaries(let dir): "stackline / stackline-worker not found in \(dir); run `swift build` first"
        case .timedOut(let what, let log): "timed out waiting for \(what); logs:\n\(log.suffix(4000))"
        }
    }
}

/// Process ids in worker log lines matching `message` (the worker logs its own pid).
func workerPids(in log: String, message: String) -> [Int32] {
    log.split(separator: "\n").filter { $0.contains(message) }.compactMap { line in
        guard let range = line.range(of: #"pid=(\d+)"#, options: .regularExpression) else { return nil }
        return Int32(line[range].dropFirst("pid=".count))
    }
}

func processExists(_ pid: Int32) -> Bool {
    // A zombie still "exists" for kill(0); its /proc state says Z.
    guard let state = procStatFields(of: pid)?.first else { return false }
    return state != "Z"
}

/// The fields of /proc/PID/stat after the command name in parentheses (which may hold spaces):
/// the process state first (field 3), the nice value at index 16 (field 19). Nil once it is gone.
func procStatFields(of pid: Int32) -> [Substring]? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return nil }
    return stat[stat.index(after: close)...].split(separator: " ")
}
