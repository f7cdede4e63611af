import Foundation
import TestSupport
import Testing

/// A master and remote workers on separate network hosts of this machine: host `m` runs
/// `stackline serve --workers 0` on 0.0.0.0:PORT, each worker host (`a`, `b`, …) is joined to `m`
/// by a veth pair of its own (10.231.N.0/24, `m` is .1) and runs `stackline-worker --connect` to
/// m's address on that link. Each worker has its own empty cache and working directory and, unless
/// a test says otherwise, no store: nothing reaches it through the file system, only over HTTP.
/// The tests talk to the master from inside `m` (curl through `ip netns exec`), and to its
/// database directly (the CLI, sqlite3): the database is the master's local file.
final class RemoteCluster {
    let h: Harness
    let net: NetworkNamespaces
    let workerHosts: [String]
    /// Every host has its own ports, so a fixed one is always free (and survives a master restart).
    let port = 8470
    private(set) var masters: [NamespaceProcess] = []
    private(set) var workers: [String: NamespaceProcess] = [:]
    private var retiredWorkers: [NamespaceProcess] = []

    init(workerHosts: [String] = ["a", "b"]) throws {
        h = try Harness()
        self.workerHosts = workerHosts
        net = try NetworkNamespaces(hosts: ["m"] + workerHosts)
        for (i, host) in workerHosts.enumerated() { try net.link("m", host, subnet: i + 1) }
    }

    deinit { shutdown() }

    /// Kills (by pid) every process this cluster started, then deletes its network hosts. With
    /// STACKLINE_KEEP_LOGS=1 the logs are copied to a new directory under /tmp first (printed).
    func shutdown() {
        for process in Array(workers.values) + retiredWorkers + masters where process.isRunning {
            process.signal(SIGKILL)
        }
        net.remove()
        if keepLogs, !logsKept,
            let keep = try? makeTemporaryDirectory(prefix: "remote-worker-logs")
        {
            logsKept = true
            for process in Array(workers.values) + retiredWorkers + masters {
                try? FileManager.default.copyItem(atPath: process.logPath, toPath: keep + "/" + (process.logPath as NSString).lastPathComponent)
            }
            print("[remote workers] logs kept in \(keep)")
        }
    }
    private var logsKept = false
    /// STACKLINE_KEEP_LOGS=1: logs kept after the test, the master's at debug level (its claims too).
    private var keepLogs: Bool { ProcessInfo.processInfo.environment["STACKLINE_KEEP_LOGS"] == "1" }

    /// The master's address as `host` reaches it (m's end of their link).
    func masterAddress(from host: String) -> String {
        guard let link = net.link(between: "m", and: host) else { fatalError("no link m-\(host)") }
        return link.hostA == "m" ? link.addressA : link.addressB
    }

    func masterURL(from host: String) -> String { "http://\(masterAddress(from: host)):\(port)" }

    /// The test runner's environment without Stackline's own variables (a stray STACKLINE_SYMBOLS
    /// or STACKLINE_DB would hand a worker the master's files), plus `extra`.
    func cleanEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
        ProcessInfo.processInfo.environment
            .filter { !$0.key.hasPrefix("STACKLINE_") && !$0.key.hasPrefix("DEBUGINFOD_") }
            .merging(extra) { $1 }
    }

    // MARK: - The master

    var master: NamespaceProcess? { masters.last }

    /// `stackline serve --listen 0.0.0.0:PORT --workers 0 --db DB --symbols STORE ARGUMENTS` inside
    /// `m`; returns once /healthz answers there.
    @discardableResult
    func startMaster(_ arguments: [String] = []) throws -> NamespaceProcess {
        let process = try NamespaceProcess(
            in: net, host: "m", executable: TestPaths.stackline,
            arguments: [
                "serve", "--listen", "0.0.0.0:\(port)", "--workers", "0", "--db", h.dbPath, "--symbols", h.symbolsPath,
            ] + arguments + (keepLogs ? ["--log-level", "debug"] : []),
            environment: cleanEnvironment(["STACKLINE_WORKER": TestPaths.worker, "STACKLINE_TEST_HOOKS": "1"]),
            logPath: h.dir.file("master-\(masters.count).log"))
        masters.append(process)
        let deadline = Date().addingTimeInterval(120)
        while true {
            if (try? net.curl(in: "m", "GET", "http://127.0.0.1:\(port)/healthz", timeout: 5).status) == 200 { break }
            guard process.isRunning else { throw TestSupportError("stackline serve exited at start:\n\(process.log.suffix(4000))") }
            guard Date() < deadline else { throw TestSupportError("stackline serve did not answer /healthz:\n\(process.log.suffix(4000))") }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return process
    }

    /// Every master log so far (a restarted master writes a new one), in order.
    var masterLog: String { masters.map(\.log).joined(separator: "\n") }

    // MARK: - Tokens

    struct Token {
        var id: Int
        var secret: String
    }

    /// `stackline tokens create --scope SCOPE --name NAME --json` against the master's database.
    func token(_ scope: String, name: String) throws -> Token {
        let out = try h.stackline(["tokens", "create", "--db", h.dbPath, "--scope", scope, "--name", name, "--json"])
        guard out.status == 0,
            let json = try? JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any],
            let id = json["id"] as? Int, let token = json["token"] as? String
        else { throw TestSupportError("tokens create --scope \(scope): \(out.summary)\n\(out.stdout)") }
        return Token(id: id, secret: token)
    }

    // MARK: - Workers

    /// `stackline-worker --connect http://M:PORT --token T --slots N --cache DIR --name NAME` inside
    /// `host`, with an empty cache and working directory of its own (so no `./symbols` either).
    @discardableResult
    func startWorker(
        _ name: String, on host: String, token: Token?, slots: Int = 2, symbols: [String] = [],
        environment: [String: String] = [:], arguments extra: [String] = []
    ) throws -> NamespaceProcess {
        let cache = h.dir.file("cache-\(name)"), cwd = h.dir.file("cwd-\(name)")
        for dir in [cache, cwd] { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        var arguments = ["--connect", masterURL(from: host), "--slots", "\(slots)", "--cache", cache, "--name", name]
        if let token { arguments += ["--token", token.secret] }
        for store in symbols { arguments += ["--symbols", store] }
        let process = try NamespaceProcess(
            in: net, host: host, executable: TestPaths.worker, arguments: arguments + extra,
            environment: cleanEnvironment(["STACKLINE_TEST_HOOKS": "1"].merging(environment) { $1 }),
            currentDirectory: cwd, logPath: h.dir.file("worker-\(name)-\(workers.count + retiredWorkers.count).log"))
        if let old = workers[name] { retiredWorkers.append(old) }
        workers[name] = process
        return process
    }

    // MARK: - The HTTP API, from inside m

    func api(_ path: String, token: Token) throws -> HTTPAnswer {
        try net.curl(in: "m", "GET", "http://127.0.0.1:\(port)\(path)", token: token.secret)
    }

    /// `GET /api/v1/workers` rows.
    func workerRows(_ read: Token) throws -> [[String: Any]] {
        let answer = try api("/api/v1/workers", token: read)
        guard answer.status == 200, let rows = answer.json?["workers"] as? [[String: Any]] else {
            throw TestSupportError("GET /api/v1/workers: \(answer)")
        }
        return rows
    }

    /// The value of one Prometheus sample of `/metrics`, e.g. `metric("stackline_affinity_claims_total", #"match="hit""#)`;
    /// nil when the sample is not there.
    func metric(_ name: String, _ labels: String? = nil, read: Token) throws -> Double? {
        let answer = try api("/metrics", token: read)
        guard answer.status == 200 else { throw TestSupportError("GET /metrics: \(answer)") }
        return prometheusValue(answer.text, name, labels)
    }

    // MARK: - Waiting

    /// Polls `condition` until true; the timeout only guards against a hang (then every log is shown).
    func waitUntil(_ what: String, timeout: Double = 600, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() {
            guard Date() < deadline else { throw TestSupportError("timed out waiting for \(what)\n\(diagnostics)") }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    /// The tails of every log, for failure messages.
    var diagnostics: String {
        var text = "--- master log(s):\n\(masterLog.suffix(5000))\n"
        for (name, process) in workers.sorted(by: { $0.key < $1.key }) {
            text += "--- worker \(name) (\(process.isRunning ? "running" : "exited")):\n\(process.log.suffix(3000))\n"
        }
        return text
    }

    func count(_ state: String) throws -> Int {
        try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state = '\(state)'")
    }

    func waitForAllDone(_ total: Int, timeout: Double = 900) throws {
        try waitUntil("\(total) jobs done", timeout: timeout) { try count("done") + count("failed") >= total }
    }
}

// MARK: - Reading the master's log

/// The value of `key=VALUE` in a log line (swift-log's stream handler prints metadata so).
func logField(_ key: String, in line: Substring) -> String? {
    guard let range = line.range(of: #"(^| )\#(key)=[^ ]+"#, options: .regularExpression) else { return nil }
    let field = line[range].drop { $0 == " " }
    return String(field.dropFirst(key.count + 1))
}

/// One `job done` line of a master log.
struct DoneLine {
    var report: Int64
    var worker: String?
    var attempt: Int?
}

func doneLines(_ log: String) -> [DoneLine] {
    log.split(separator: "\n").filter { $0.contains("job done") }.compactMap { line in
        guard let report = logField("report", in: line).flatMap({ Int64($0) }) else { return nil }
        return DoneLine(report: report, worker: logField("worker", in: line), attempt: logField("attempt", in: line).flatMap { Int($0) })
    }
}

/// One request line of a master log (`request method=… path=… status=… token=ID`).
struct RequestLine {
    var method: String
    var path: String
    var status: Int
    var token: Int?
}

func requestLines(_ log: String) -> [RequestLine] {
    log.split(separator: "\n").compactMap { line in
        guard line.hasSuffix(" request"), let method = logField("method", in: line), let path = logField("path", in: line),
            let status = logField("status", in: line).flatMap({ Int($0) })
        else { return nil }
        return RequestLine(method: method, path: path, status: status, token: logField("token", in: line).flatMap { Int($0) })
    }
}

/// debuginfod requests (`/buildid/ID/debuginfo|executable|…`) by the token with `tokenId`.
func buildIdRequests(_ log: String, tokenId: Int) -> [RequestLine] {
    requestLines(log).filter { $0.token == tokenId && $0.path.hasPrefix("/buildid/") }
}

/// The value of a Prometheus text sample `NAME{LABELS} VALUE` (`labels` exactly as printed
/// between the braces, one label or several; nil: the sample without labels).
func prometheusValue(_ text: String, _ name: String, _ labels: String?) -> Double? {
    for line in text.split(separator: "\n") where line.hasPrefix(name) && !line.hasPrefix("#") {
        let rest = line.dropFirst(name.count)
        let sample: Substring
        if let labels {
            guard rest.hasPrefix("{"), let close = rest.firstIndex(of: "}") else { continue }
            let printed = rest[rest.index(after: rest.startIndex)..<close].split(separator: ",").map(String.init).sorted()
            guard printed == labels.split(separator: ",").map(String.init).sorted() else { continue }
            sample = rest[rest.index(after: close)...]
        } else {
            guard rest.hasPrefix(" ") else { continue }
            sample = rest
        }
        if let value = Double(sample.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") { return value }
    }
    return nil
}

/// Lines of a worker's log that a test hook wrote, as (report, attempt).
func hookLines(_ log: String) -> [(report: Int64, attempt: Int?)] {
    log.split(separator: "\n").filter { $0.contains("test hook:") }.compactMap { line in
        guard let report = logField("report", in: line).flatMap({ Int64($0) }) else { return nil }
        return (report, logField("attempt", in: line).flatMap { Int($0) })
    }
}

/// An ISO 8601 time as the API prints it (with or without fractional seconds).
func parseISO8601(_ text: String?) -> Date? {
    guard let text else { return nil }
    let formatter = ISO8601DateFormatter()
    if let date = formatter.date(from: text) { return date }
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)
}

// MARK: - Programs and reports

/// `Tests/Fixtures/demo/Demo.swift` compiled with DWARF under a module and file name of its own
/// (so two of them have different build ids), and real crash reports of it written by the Swift
/// runtime's backtracer (`symbolicate=off`: addresses only).
struct CrashProgram {
    var name: String
    var binary: String
    var buildID: String

    static func build(_ name: String, in dir: String) throws -> CrashProgram {
        let binary = dir + "/" + name
        try runChecked(try findTool("swiftc"), ["-g", "-Onone", "-module-name", name, TestPaths.demoSource, "-o", binary])
        guard let buildID = try readelfBuildID(binary) else { throw TestSupportError("no GNU build id in \(binary)") }
        return CrashProgram(name: name, binary: binary, buildID: buildID.lowercased())
    }

    /// The program as the shared fixture compiled it (`Demo`).
    static func sharedDemo() throws -> CrashProgram {
        let binary = try CrashFixture.shared.binary()
        guard let buildID = try readelfBuildID(binary) else { throw TestSupportError("no GNU build id in \(binary)") }
        return CrashProgram(name: (binary as NSString).lastPathComponent, binary: binary, buildID: buildID.lowercased())
    }

    /// One crash (`mode`: index or segv), as the runtime's JSON report.
    func report(mode: String = "index") throws -> Data {
        let out = try makeTemporaryDirectory(prefix: "crash") + "/report.json"
        defer { try? FileManager.default.removeItem(atPath: (out as NSString).deletingLastPathComponent) }
        let run = try runProcess(
            binary, [mode], environment: ["SWIFT_BACKTRACE": "enable=yes,symbolicate=off,format=json,output-to=\(out)"],
            timeout: 120)
        guard run.signaled || run.status != 0 else { throw FixtureError.didNotCrash }
        guard let data = FileManager.default.contents(atPath: out), !data.isEmpty else { throw FixtureError.noReport(run.stderr) }
        return data
    }
}

/// What an independent symbolizer says about one raw frame of a report: its inline levels,
/// innermost first.
struct OracleFrame: CustomStringConvertible {
    struct Level: Equatable {
        var symbol: String?
        var file: String?
        var line: Int?
    }
    var index: Int
    var fileAddress: UInt64
    var levels: [Level]
    var description: String { "#\(index) 0x\(String(fileAddress, radix: 16)): \(levels)" }
}

/// llvm-symbolizer's answers for the crashed thread's frames of a raw Swift backtrace report that
/// fall in `program`. File addresses come from the report's own image base and the program's
/// lowest PT_LOAD address (readelf), a return address looked up one byte back (the call), so
/// nothing here comes from Stackline.
func llvmSymbolizerFrames(report: Data, program: CrashProgram) throws -> [OracleFrame] {
    let json = try #require(try JSONSerialization.jsonObject(with: report) as? [String: Any])
    let image = try #require((json["images"] as? [[String: Any]])?.first { $0["name"] as? String == program.name })
    func hexValue(_ value: Any?) -> UInt64? {
        guard let text = value as? String, text.hasPrefix("0x") else { return nil }
        return UInt64(text.dropFirst(2), radix: 16)
    }
    let base = try #require(hexValue(image["baseAddress"]))
    let end = try #require(hexValue(image["endOfText"]))
    let loads = try runChecked("/usr/bin/readelf", ["-lW", program.binary]).stdout.split(separator: "\n")
        .filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("LOAD") }
        .compactMap { line -> UInt64? in
            let words = line.split(separator: " ")
            return words.count > 2 ? UInt64(words[2].dropFirst(2), radix: 16) : nil
        }
    let lowest = try #require(loads.min())
    let thread = try #require((json["threads"] as? [[String: Any]])?.first { $0["crashed"] as? Bool == true })
    var wanted: [(index: Int, address: UInt64)] = []
    for (index, frame) in (thread["frames"] as? [[String: Any]] ?? []).enumerated() {
        guard let address = hexValue(frame["address"]), address >= base, address < end else { continue }
        let adjust: UInt64 = frame["kind"] as? String == "returnAddress" ? 1 : 0
        wanted.append((index, address - base + lowest - adjust))
    }
    guard !wanted.isEmpty else { return [] }
    let symbolizer = try findTool(anyOf: ["llvm-symbolizer-14", "llvm-symbolizer"])
    let input = wanted.map { "0x" + String($0.address, radix: 16) }.joined(separator: "\n") + "\n"
    let out = try runChecked(symbolizer, ["--obj=" + program.binary, "-i", "-f", "--no-demangle", "--print-address"], stdin: input)
    var answers: [OracleFrame] = []
    for block in out.stdout.components(separatedBy: "\n\n") {
        let lines = block.split(separator: "\n").map(String.init)
        guard lines.count >= 3, answers.count < wanted.count else { continue }
        let asked = wanted[answers.count]
        guard UInt64(lines[0].dropFirst(2), radix: 16) == asked.address else {
            throw TestSupportError("llvm-symbolizer out of step: \(lines[0]) for 0x\(String(asked.address, radix: 16))")
        }
        var levels: [OracleFrame.Level] = []
        var i = 1
        while i + 1 < lines.count {
            // "FILE:LINE:COLUMN"; line 0 or ?? means no location.
            let parts = lines[i + 1].split(separator: ":", omittingEmptySubsequences: false)
            let line = parts.count >= 3 ? Int(parts[parts.count - 2]) : nil
            let file = parts.count >= 3 ? parts[0..<(parts.count - 2)].joined(separator: ":") : nil
            levels.append(OracleFrame.Level(
                symbol: lines[i] == "??" ? nil : lines[i], file: line == 0 || file == "??" ? nil : file, line: line == 0 ? nil : line))
            i += 2
        }
        answers.append(OracleFrame(index: asked.index, fileAddress: asked.address, levels: levels))
    }
    guard answers.count == wanted.count else {
        throw TestSupportError("llvm-symbolizer gave \(answers.count) answers for \(wanted.count) addresses: \(out.stdout)")
    }
    return answers
}

/// `stackline report ID --json --db DB`, as a JSON object (the report itself, whether the
/// command prints it at the top level or under "report").
func storedReport(db: String, id: Int64) throws -> [String: Any] {
    let out = try runProcess(TestPaths.stackline, ["report", "\(id)", "--json", "--db", db], timeout: 120)
    guard out.succeeded, let json = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any] else {
        throw TestSupportError("stackline report \(id): \(out.summary)")
    }
    if json["threads"] == nil, let inner = json["report"] as? [String: Any] { return inner }
    return json
}

/// The crashed thread's frames of a stored report.
func crashedFrames(_ report: [String: Any]) -> [[String: Any]] {
    ((report["threads"] as? [[String: Any]])?.first { $0["crashed"] as? Bool == true }?["frames"] as? [[String: Any]]) ?? []
}

/// Checks our frames of `report` in `program` against llvm-symbolizer's answers: per raw frame,
/// the same number of inline levels, the same lines and files, the outermost level's linkage name.
func expectFramesMatch(_ report: [String: Any], _ oracle: [OracleFrame], _ what: String) {
    let frames = crashedFrames(report)
    for expected in oracle {
        let ours = frames.filter { $0["index"] as? Int == expected.index }
        #expect(ours.allSatisfy { $0["status"] as? String == "symbolicated" }, "\(what) frame \(expected.index): \(ours)")
        #expect(ours.map { $0["line"] as? Int } == expected.levels.map(\.line), "\(what) frame \(expected.index) lines: ours \(ours), llvm-symbolizer \(expected)")
        #expect(
            ours.map { ($0["file"] as? String).map { ($0 as NSString).lastPathComponent } }
                == expected.levels.map { $0.file.map { ($0 as NSString).lastPathComponent } },
            "\(what) frame \(expected.index) files: ours \(ours), llvm-symbolizer \(expected)")
        #expect(ours.last?["symbol"] as? String == expected.levels.last?.symbol, "\(what) frame \(expected.index) symbol: ours \(ours), llvm-symbolizer \(expected)")
    }
}
