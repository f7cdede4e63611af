import Foundation

/// Separate network hosts on this machine, for tests that need a real network between processes:
/// one Linux network namespace per host (`ip netns add`, loopback up), joined by veth pairs with
/// an address on each end. Nothing joins the machine's own namespace and no host has a default
/// route, so no packet can leave the machine; every host has its own ports (a fixed port is free
/// in each) and its own loopback.
///
/// Names are unique per test run (`sltest-PID-N-HOST`); `remove()` (also run by deinit) stops
/// whatever still runs inside and deletes the namespaces, after a failure too. Namespaces left by
/// a test process that died are deleted the next time one is made.
///
/// Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN), as the tests and CI run: without it the
/// initialiser throws an error saying so, and the test fails rather than skipping.
public final class NetworkNamespaces: @unchecked Sendable {
    /// One veth pair: `interfaceA` with `addressA` in host A, `interfaceB` with `addressB` in host B.
    public struct Link: Sendable, CustomStringConvertible {
        public var hostA: String
        public var hostB: String
        public var interfaceA: String
        public var interfaceB: String
        public var addressA: String
        public var addressB: String
        public var prefixLength: Int
        public var description: String { "\(hostA) \(interfaceA) \(addressA) <-> \(hostB) \(interfaceB) \(addressB) /\(prefixLength)" }
    }

    public static let namePrefix = "sltest-"
    nonisolated(unsafe) private static var counter = 0
    private static let counterLock = NSLock()

    /// The `ip` tool (iproute2).
    public let ip: String
    /// host name → namespace name
    public private(set) var namespaces: [String: String] = [:]
    public private(set) var links: [Link] = []
    private let lock = NSLock()
    private var removed = false
    private let runID: String

    /// Makes one namespace per entry of `hosts` (short names: they become interface names).
    public init(hosts: [String]) throws {
        ip = try findTool("ip")
        let n = Self.counterLock.withLock { () -> Int in
            Self.counter += 1
            return Self.counter
        }
        runID = "\(Self.namePrefix)\(getpid())-\(n)"
        Self.removeLeftovers(ip: ip)
        do {
            for host in hosts { try add(host) }
        } catch {
            remove()
            throw error
        }
    }

    deinit { remove() }

    /// The namespace of `host`.
    public func name(of host: String) -> String {
        guard let name = namespaces[host] else { fatalError("no network host \(host) in \(namespaces.keys.sorted())") }
        return name
    }

    private func add(_ host: String) throws {
        precondition(host.count <= 6 && host.allSatisfy { $0.isLetter || $0.isNumber }, "host names are short and alphanumeric: \(host)")
        let name = "\(runID)-\(host)"
        let made = try runProcess(ip, ["netns", "add", name], timeout: 60)
        guard made.succeeded else {
            throw TestSupportError(
                """
                cannot create network namespace \(name): \(made.summary). These tests run the master and each \
                worker on a network host of its own (a Linux network namespace joined by veth pairs) and need \
                root (CAP_SYS_ADMIN and CAP_NET_ADMIN); run them as root, as CI does.
                """)
        }
        namespaces[host] = name
        try ipChecked(["-n", name, "link", "set", "lo", "up"])
    }

    /// Joins hosts `a` and `b` with a veth pair on `10.231.SUBNET.0/24`: `a` gets `.1`, `b` `.2`.
    /// The interfaces are named after the peer host (`to-b` in `a`, `to-a` in `b`) and are up.
    @discardableResult
    public func link(_ a: String, _ b: String, subnet: Int) throws -> Link {
        precondition((1...254).contains(subnet))
        let (nsA, nsB) = (name(of: a), name(of: b))
        let link = Link(
            hostA: a, hostB: b, interfaceA: "to-\(b)", interfaceB: "to-\(a)",
            addressA: "10.231.\(subnet).1", addressB: "10.231.\(subnet).2", prefixLength: 24)
        // Both ends are made straight inside their namespaces: nothing appears in the machine's own.
        try ipChecked(["-n", nsA, "link", "add", link.interfaceA, "type", "veth", "peer", "name", link.interfaceB, "netns", nsB])
        try ipChecked(["-n", nsA, "addr", "add", "\(link.addressA)/\(link.prefixLength)", "dev", link.interfaceA])
        try ipChecked(["-n", nsB, "addr", "add", "\(link.addressB)/\(link.prefixLength)", "dev", link.interfaceB])
        try ipChecked(["-n", nsA, "link", "set", link.interfaceA, "up"])
        try ipChecked(["-n", nsB, "link", "set", link.interfaceB, "up"])
        lock.withLock { links.append(link) }
        return link
    }

    /// The link between `a` and `b` (either order).
    public func link(between a: String, and b: String) -> Link? {
        lock.withLock { links.first { ($0.hostA == a && $0.hostB == b) || ($0.hostA == b && $0.hostB == a) } }
    }

    /// `ip link set INTERFACE up|down` inside `host`: down, the link carries nothing either way
    /// (a cable pulled), and connections over it stall rather than fail.
    public func setLink(_ interface: String, in host: String, up: Bool) throws {
        try ipChecked(["-n", name(of: host), "link", "set", interface, up ? "up" : "down"])
    }

    /// The command line that runs `executable ARGUMENTS` inside `host`: `ip netns exec NS …`
    /// (ip execs the program, so its pid is the program's).
    public func command(in host: String, _ executable: String, _ arguments: [String]) -> [String] {
        ["netns", "exec", name(of: host), executable] + arguments
    }

    /// Runs a command to completion inside `host` (see `runProcess`).
    @discardableResult
    public func run(
        in host: String, _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        stdin: Data? = nil, timeout: Double = 300
    ) throws -> ProcessOutput {
        let path = executable.contains("/") ? executable : try findTool(executable)
        return try runProcess(ip, command(in: host, path, arguments), environment: environment, stdin: stdin, timeout: timeout)
    }

    /// One HTTP request through the real curl, run inside `host`.
    public func curl(
        in host: String, _ method: String = "GET", _ url: String, token: String? = nil, body: Data? = nil,
        timeout: Double = 60
    ) throws -> HTTPAnswer {
        let scratch = try makeTemporaryDirectory(prefix: "curl")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        var arguments = ["-sS", "-X", method, "-o", scratch + "/body", "-D", scratch + "/headers", "-w", "%{http_code}",
                         "--max-time", "\(Int(timeout))"]
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        if let body {
            try body.write(to: URL(fileURLWithPath: scratch + "/request"))
            arguments += ["--data-binary", "@" + scratch + "/request"]
        }
        let out = try run(in: host, "curl", arguments + [url], timeout: timeout + 30)
        // curl prints 000 when it got no answer (refused, timed out).
        let status = Int(out.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        var fields: [String: String] = [:]
        let head = (try? String(contentsOfFile: scratch + "/headers", encoding: .utf8)) ?? ""
        for line in head.split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTPAnswer(status: status, headers: fields, body: FileManager.default.contents(atPath: scratch + "/body") ?? Data())
    }

    /// Pids of the processes inside `host` (`ip netns pids`).
    public func pids(in host: String) -> [Int32] {
        guard let name = namespaces[host] else { return [] }
        return Self.pids(inNamespace: name, ip: ip)
    }

    /// Kills (SIGKILL, by pid) whatever still runs inside the namespaces, then deletes them.
    /// Safe to call more than once.
    public func remove() {
        let names: [String] = lock.withLock {
            guard !removed else { return [] }
            removed = true
            return Array(namespaces.values)
        }
        for name in names {
            // Only processes this test started can be inside a namespace it made.
            for _ in 0..<50 {
                let inside = Self.pids(inNamespace: name, ip: ip)
                if inside.isEmpty { break }
                for pid in inside { kill(pid, SIGKILL) }
                Thread.sleep(forTimeInterval: 0.1)
            }
            // Deleting the namespace deletes its veth ends, and so their peers.
            _ = try? runProcess(ip, ["netns", "delete", name], timeout: 60)
        }
    }

    private func ipChecked(_ arguments: [String]) throws {
        let out = try runProcess(ip, arguments, timeout: 60)
        guard out.succeeded else { throw TestSupportError("network setup failed: \(out.summary)") }
    }

    private static func pids(inNamespace name: String, ip: String) -> [Int32] {
        let out = try? runProcess(ip, ["netns", "pids", name], timeout: 60)
        return (out?.stdout ?? "").split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
    }

    /// Deletes namespaces named by a test process that no longer runs (one killed mid-test).
    /// Their processes are left alone: this run did not start them.
    private static func removeLeftovers(ip: String) {
        guard let list = try? runProcess(ip, ["netns", "list"], timeout: 60) else { return }
        for line in list.stdout.split(separator: "\n") {
            guard let name = line.split(separator: " ").first, name.hasPrefix(namePrefix) else { continue }
            let pidText = name.dropFirst(namePrefix.count).prefix { $0.isNumber }
            guard let pid = Int32(pidText), pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH {
                _ = try? runProcess(ip, ["netns", "delete", String(name)], timeout: 60)
            }
        }
    }
}

/// A long-running program started inside a network host (`ip netns exec`), with stdout and stderr
/// in a log file. Given its whole environment, so nothing leaks in from the test runner's.
public final class NamespaceProcess: @unchecked Sendable {
    public let process = Process()
    public let logPath: String
    public let host: String
    public let arguments: [String]

    public init(
        in namespaces: NetworkNamespaces, host: String, executable: String, arguments: [String],
        environment: [String: String], currentDirectory: String? = nil, logPath: String
    ) throws {
        self.logPath = logPath
        self.host = host
        self.arguments = arguments
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: namespaces.ip)
        process.arguments = namespaces.command(in: host, executable, arguments)
        process.environment = environment
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        process.standardInput = FileHandle.nullDevice
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = log
        process.standardError = log
        try process.run()
        try? log.close()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The program's pid (`ip netns exec` execs it in place).
    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    public func signal(_ sig: Int32) { kill(pid, sig) }

    /// The arguments for messages, with the value of any `--token` left out.
    public var printableArguments: String {
        var words: [String] = []
        for (i, word) in arguments.enumerated() { words.append(i > 0 && arguments[i - 1] == "--token" ? "<token>" : word) }
        return words.joined(separator: " ")
    }

    /// Waits for exit (the timeout only guards against a hang; then it is killed and an error
    /// thrown) and returns the exit status, or the signal number when `signaled`.
    public func waitForExit(timeout: Double = 120) throws -> (status: Int32, signaled: Bool) {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            guard Date() < deadline else {
                kill(pid, SIGKILL)
                throw TestSupportError("`\(printableArguments)` did not exit within \(Int(timeout)) s; log:\n\(log.suffix(3000))")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return (process.terminationStatus, process.terminationReason == .uncaughtSignal)
    }
}
