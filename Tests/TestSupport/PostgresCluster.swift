import Foundation

/// A throwaway PostgreSQL 15 cluster on a free loopback port, in a temporary directory that
/// goes with it. `shared` is the one a test process starts lazily and every test uses, each in
/// a database of its own (`makeDatabase()`); a test that stops or restarts a server starts its
/// own with `PostgresCluster.start()`, so the others' connections are not cut.
///
/// Every cluster is stopped and its directory removed when the process exits, and a cluster left
/// by a test process that died without exiting (SIGKILL, a crash) is swept by the next start.
/// PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user.
///
/// Sendable: `lock` guards `port` and the database counter; the directory is set once in init.
public final class PostgresCluster: @unchecked Sendable {
    public static let binaries = "/usr/lib/postgresql/15/bin"

    /// The process-wide cluster, started at first use.
    public static let shared: Result<PostgresCluster, TestSupportError> = Result { () throws(TestSupportError) in try start() }

    /// The directory holding `data/`, the server's log and its Unix socket.
    public let directory: String
    public private(set) var port: Int {
        get { lock.withLock { _port } }
        set { lock.withLock { _port = newValue } }
    }
    private var _port = 0
    private let lock = NSLock()
    private var databaseNumber = 0

    /// Starts a new cluster of its own (most tests want `shared` instead). With
    /// `passwordAuthentication`, TCP connections must give a password (SCRAM) and only the Unix
    /// socket `psql` uses is trusted: the URLs `url` and `makeDatabase` return, for the
    /// password-less `postgres`, are then refused; make a role with a password to connect.
    public static func start(passwordAuthentication: Bool = false) throws(TestSupportError) -> PostgresCluster {
        for tool in ["initdb", "pg_ctl", "psql"] where !FileManager.default.isExecutableFile(atPath: "\(binaries)/\(tool)") {
            throw TestSupportError("PostgreSQL 15's \(tool) is not in \(binaries): run scripts/install-deps.sh (postgresql)")
        }
        sweepOrphans()
        let cluster = try PostgresCluster()
        do {
            try cluster.initialise(passwordAuthentication: passwordAuthentication)
            try cluster.startServer(newPort: true)
        } catch {
            cluster.removeNow()
            throw error
        }
        return cluster
    }

    private init() throws(TestSupportError) {
        // Directly in /tmp, not $TMPDIR: the `postgres` user must be able to reach it, and a Unix
        // socket's path must stay under 108 bytes.
        var template = Array("/tmp/\(Self.prefix)XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TestSupportError("mkdtemp in /tmp failed: errno \(errno)") }
        directory = String(cString: made)
        _ = FileManager.default.createFile(atPath: directory + "/owner.pid", contents: Data("\(getpid())\n".utf8))
        Self.registerForExit(directory)
        if Self.asRoot {
            do {
                try runChecked("/bin/chown", ["-R", "postgres:postgres", directory])
            } catch {
                throw TestSupportError("\(error)")
            }
        }
    }

    /// A new empty database; its URL, `postgres://postgres@127.0.0.1:PORT/NAME`.
    public func makeDatabase() throws(TestSupportError) -> String {
        let name = lock.withLock { () -> String in
            databaseNumber += 1
            return "test_\(getpid())_\(databaseNumber)"
        }
        try psql("CREATE DATABASE \(name)")
        return url(database: name)
    }

    /// The URL of database `database` on this cluster, as the superuser `postgres`.
    public func url(database: String = "postgres") -> String { "postgres://postgres@127.0.0.1:\(port)/\(database)" }

    /// Runs `sql` through psql as the superuser, in database `database`; returns psql's output
    /// (unaligned, tuples only: one line a row, `|` between columns).
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws(TestSupportError) -> String {
        try run(
            "\(Self.binaries)/psql",
            ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", directory, "-p", "\(port)", "-U", "postgres", "-d", database, "-c", sql],
            asServerUser: false
        ).stdout
    }

    /// Stops the server (`mode`: `immediate` is a crash, `fast` a clean shutdown that ends the
    /// clients' sessions) and starts it again on the same port. Every open connection breaks.
    public func restart(mode: String = "immediate") throws(TestSupportError) {
        try pgCtl(["stop", "-m", mode])
        try startServer(newPort: false)
    }

    /// Stops the server (`mode` as for `restart`) and leaves it stopped until `start()`: the
    /// database is gone for as long as the test wants.
    public func stopServer(mode: String = "immediate") throws(TestSupportError) {
        try pgCtl(["stop", "-m", mode])
    }

    /// Starts a server `stopServer` stopped, on the same port.
    public func startServer() throws(TestSupportError) {
        try startServer(newPort: false)
    }

    /// Stops the server and removes its directory now instead of at exit.
    public func stop() {
        try? pgCtl(["stop", "-m", "immediate"])
        removeNow()
    }

    // MARK: - Starting

    private static let prefix = "stackline-pg."
    private static var asRoot: Bool { getuid() == 0 }

    private func initialise(passwordAuthentication: Bool) throws(TestSupportError) {
        let host = passwordAuthentication ? ["--auth-host=scram-sha-256"] : []
        try run(
            "\(Self.binaries)/initdb",
            ["-D", directory + "/data", "-A", "trust"] + host + ["-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"],
            asServerUser: true)
    }

    /// `pg_ctl start` on a free port, or on the current one; a port another process took between
    /// the probe and the start is retried with a new one.
    private func startServer(newPort: Bool) throws(TestSupportError) {
        var lastError = TestSupportError("no attempt")
        for _ in 0..<(newPort ? 5 : 1) {
            if newPort { port = try freeLoopbackPort() }
            let options = "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off"
            do {
                try pgCtl(["start", "-w", "-t", "60", "-l", directory + "/server.log", "-o", options])
                return
            } catch {
                let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
                lastError = TestSupportError("\(error)\nserver log:\n\(log.suffix(2_000))")
            }
        }
        throw lastError
    }

    private func pgCtl(_ arguments: [String]) throws(TestSupportError) {
        try run("\(Self.binaries)/pg_ctl", ["-D", directory + "/data"] + arguments, asServerUser: true)
    }

    /// Foundation's Process learns that its child exited when the child's end of a socket pair
    /// closes, and the postmaster `pg_ctl start` leaves behind would inherit that end and hold
    /// it open for its whole life: bash closes every descriptor but the three standard ones
    /// before running the command. PG* variables of the test's own environment would point
    /// psql at another server or service, so they go too.
    private static let cleanStart = #"unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGSERVICE PGSERVICEFILE PGOPTIONS PGPASSWORD PGPASSFILE PGSSLMODE; for p in /proc/$$/fd/*; do n=${p##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done; exec "$@""#

    @discardableResult
    private func run(_ tool: String, _ arguments: [String], asServerUser: Bool) throws(TestSupportError) -> ProcessOutput {
        let command = asServerUser && Self.asRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--", tool] + arguments : [tool] + arguments
        do {
            return try runChecked("/bin/bash", ["-c", Self.cleanStart, "bash"] + command, environment: ["LC_ALL": "C"])
        } catch let error as TestSupportError {
            throw error
        } catch {
            throw TestSupportError("\(error)")
        }
    }


    // MARK: - Cleaning up

    private func removeNow() {
        Self.stopAndRemove(directory)
        Self.exitList.mutate { $0.removeAll { $0 == directory } }
    }

    private static let exitList = Locked<[String]>([])

    private static func registerForExit(_ directory: String) {
        _ = exitHandler
        exitList.mutate { $0.append(directory) }
    }

    private static let exitHandler: Void = {
        atexit { PostgresCluster.exitList.value.forEach(PostgresCluster.stopAndRemove) }
    }()

    /// What `pg_ctl stop -m immediate` does, without starting a process at exit: SIGQUIT to the
    /// postmaster, whose pid is the first line of `postmaster.pid`, then a wait for it to go
    /// (it is not our child, so there is no waitpid) before its files are removed.
    private static func stopAndRemove(_ directory: String) {
        if let text = try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8),
            let pid = text.split(separator: "\n").first.flatMap({ pid_t($0) }), pid > 0
        {
            kill(pid, SIGQUIT)
            var waits = 0
            while kill(pid, 0) == 0 && waits < 500 {
                usleep(10_000)
                waits += 1
            }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Clusters whose test process is gone: one killed outright never ran its exit handler.
    private static func sweepOrphans() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/tmp") else { return }
        for name in names where name.hasPrefix(prefix) {
            let directory = "/tmp/" + name
            guard let text = try? String(contentsOfFile: directory + "/owner.pid", encoding: .utf8),
                let owner = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), owner != getpid()
            else { continue }
            if kill(owner, 0) != 0 && errno == ESRCH { stopAndRemove(directory) }
        }
    }
}
