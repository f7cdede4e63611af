import Foundation

/// A real `stackline serve` on a free loopback port (`--listen 127.0.0.1:0`; the port is read
/// from its "listening" log line), with its stdout and stderr in a log file.
public final class ServerProcess {
    public let process = Process()
    public let logPath: String
    public private(set) var port = 0

    /// Starts `stackline serve ARGUMENTS --listen 127.0.0.1:0` and waits until it listens.
    /// `launcher` runs it through a command that execs it (e.g. `["prlimit", "--nofile=256", "--"]`),
    /// so the process and its pid are still serve's.
    public init(
        arguments: [String], environment: [String: String], logPath: String, startTimeout: Double = 60, launcher: [String] = []
    ) throws {
        self.logPath = logPath
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let command = launcher + [TestPaths.stackline, "serve", "--listen", "127.0.0.1:0"] + arguments
        process.executableURL = URL(fileURLWithPath: command[0].contains("/") ? command[0] : try findTool(command[0]))
        process.arguments = Array(command.dropFirst())
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: logPath)
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
        let deadline = Date().addingTimeInterval(startTimeout)
        while port == 0 {
            if let range = log.range(of: #"listening.*address=127\.0\.0\.1:\d+|address=127\.0\.0\.1:\d+.*listening"#, options: .regularExpression),
                let portRange = log[range].range(of: #"127\.0\.0\.1:\d+"#, options: .regularExpression)
            {
                port = Int(log[portRange].split(separator: ":").last ?? "") ?? 0
            }
            guard port == 0 else { break }
            guard process.isRunning else { throw TestSupportError("stackline serve exited at start: \(log)") }
            guard Date() < deadline else {
                kill(process.processIdentifier, SIGKILL)
                throw TestSupportError("stackline serve did not listen within \(Int(startTimeout)) s: \(log)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    public var pid: Int32 { process.processIdentifier }
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    public func signal(_ sig: Int32) { kill(pid, sig) }

    /// Waits for exit (the timeout only guards against a hang) and returns the exit status.
    public func waitForExit(timeout: Double = 120) throws -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            guard Date() < deadline else {
                kill(pid, SIGKILL)
                throw TestSupportError("stackline serve did not exit within \(Int(timeout)) s: \(log)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return process.terminationStatus
    }

    /// One request through the real curl: `path` is appended to the server's URL.
    public func curl(_ method: String = "GET", _ path: String, token: String? = nil, body: Data? = nil,
                     headers: [String] = [], extra: [String] = []) throws -> HTTPAnswer {
        try HTTPAnswer.curl(method, baseURL + path, token: token, body: body, headers: headers, extra: extra)
    }
}

/// What curl got back: status, headers (lowercased names) and body.
public struct HTTPAnswer: Sendable, CustomStringConvertible {
    public var status: Int
    public var headers: [String: String]
    public var body: Data

    public var text: String { String(decoding: body, as: UTF8.self) }
    /// The body as a JSON object (nil when it is not one).
    public var json: [String: Any]? { try? JSONSerialization.jsonObject(with: body) as? [String: Any] }
    public var description: String { "HTTP \(status): \(text.prefix(500))" }

    /// Runs curl; the body goes through a file, so binary and large bodies are sent unchanged.
    public static func curl(_ method: String, _ url: String, token: String? = nil, body: Data? = nil,
                            headers: [String] = [], extra: [String] = []) throws -> HTTPAnswer {
        let scratch = try makeTemporaryDirectory(prefix: "curl")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var arguments = ["-sS", "-X", method, "-o", scratch + "/body", "-D", scratch + "/headers", "-w", "%{http_code}",
                         "--max-time", "120"]
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        for header in headers { arguments += ["-H", header] }
        if let body {
            try body.write(to: URL(fileURLWithPath: scratch + "/request"))
            arguments += ["--data-binary", "@" + scratch + "/request"]
        }
        let out = try runProcess("curl", arguments + extra + [url], timeout: 180)
        guard let status = Int(out.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TestSupportError("curl gave no status: \(out.summary)")
        }
        var fields: [String: String] = [:]
        let head = (try? String(contentsOfFile: scratch + "/headers", encoding: .utf8)) ?? ""
        for line in head.split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTPAnswer(
            status: status, headers: fields, body: FileManager.default.contents(atPath: scratch + "/body") ?? Data())
    }

    /// POSTs each file of `paths` to `url` in turn from one curl process, over one kept-alive
    /// connection while the server keeps it: hundreds of reports for one process, where `curl`
    /// starts one (and connects) a request. The statuses, one a file, in order (0: no answer).
    public static func postEach(_ url: String, token: String? = nil, paths: [String]) throws -> [Int] {
        let scratch = try makeTemporaryDirectory(prefix: "curl")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        // A config file rather than arguments: hundreds of requests fit, and the token stays out
        // of the process list.
        func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        var config = "silent\nshow-error\n"
        for (i, path) in paths.enumerated() {
            if i > 0 { config += "next\n" }
            config += "url = \(quoted(url))\ndata-binary = \(quoted("@" + path))\noutput = \"/dev/null\"\n"
            config += "write-out = \"%{http_code}\\n\"\nmax-time = 120\n"
            if let token { config += "header = \(quoted("Authorization: Bearer " + token))\n" }
        }
        try config.write(toFile: scratch + "/config", atomically: true, encoding: .utf8)
        let out = try runProcess("curl", ["--config", scratch + "/config"], timeout: 900)
        let statuses = out.stdout.split(separator: "\n").compactMap { Int($0) }
        guard statuses.count == paths.count else {
            throw TestSupportError("curl gave \(statuses.count) statuses for \(paths.count) requests: \(out.summary)")
        }
        return statuses
    }
}
