import Alerts
import ArgumentParser
import Foundation
import Storage
import Logging
import Master
import Server
import StacklineLogging
import SystemCalls

/// `stackline serve`: the HTTP API and the master in one process.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP API (ingest, queries, on-the-spot symbolication, metrics) and the master in one process.",
        discussion: """
            Every endpoint but /healthz and /readyz needs `Authorization: Bearer TOKEN` (create \
            tokens with `stackline tokens create`). SIGTERM or SIGINT stops accepting connections, \
            lets in-flight requests finish, then drains the master as `stackline master` does. \
            The API is described in docs/openapi.yaml, served at /api/v1/openapi.yaml; docs/serve.md \
            has the details.
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Address and port to listen on (port 0 picks a free one; the log says which).")
    var listen: ListenAddress = ListenAddress(host: "127.0.0.1", port: 8080)

    @OptionGroup var master: MasterOptions

    @Option(help: "Largest request body in bytes, compressed or not (413 past it).")
    var maxBody = 16 << 20

    @Option(help: "Largest report in bytes after inflating a gzip body.")
    var maxReport = 64 << 20

    @Option(help: "Bytes the payloads of one SDK batch may inflate to, together; past it the batch's remaining reports are refused.")
    var maxBatchInflate = 128 << 20

    @Option(help: "CPU seconds one SDK batch may use; past it the batch's remaining reports are refused.")
    var maxBatchCpu: Double = 2

    @Option(help: "Requests per second each ingest token may make to the ingest endpoints (0: no limit).")
    var ingestRate: Double = 100

    @Option(help: "Requests an ingest token may make in a burst before --ingest-rate applies.")
    var ingestBurst: Double = 200

    @Option(help: "Seconds POST /api/v1/symbolicate waits for its worker before killing it.")
    var symbolicateTimeout: Double = 30

    @Option(help: "Parse processes (stackline-worker --parse): reports are parsed in them, never in serve, so a malformed report costs one request.")
    var parsers = 2

    @Option(help: "Seconds one report's parse may take; past it the parse process is killed and the report refused.")
    var parseTimeout: Double = 10

    @Option(help: "Seconds in-flight requests get after SIGTERM/SIGINT.")
    var requestDrain: Double = 10

    @Option(help: "Seconds a client has to send a request's head: from accepting the connection (TLS handshake included), or from the first byte of a later request on a kept-alive one; 408 and close past it (0: no deadline).")
    var headerTimeout: Double = 20

    @Option(help: "Seconds a request body gets at the least, from the end of its head; --body-min-rate adds to it; the connection is closed past it (0: no deadline).")
    var bodyTimeout: Double = 20

    @Option(help: "Bytes of body that earn a request one more second past --body-timeout: bodies slower than this on average are cut.")
    var bodyMinRate = 500

    @Option(help: "Seconds a kept-alive connection may wait for its next request before it is closed (0: no limit).")
    var idleTimeout: Double = 30

    @Option(help: "Client connections open at once, lowered to fit the descriptor limit; past it new connections wait in the accept queue (0: no cap).")
    var maxConnections = 1024

    @Option(help: "Client connections open at once from one IPv4 address or IPv6 /64; past it a new one is closed at once (0: no cap; behind a reverse proxy every client has the proxy's address).")
    var maxConnectionsPerAddress = 128

    @Option(help: "PEM certificate chain: serve HTTPS (with --tls-key).")
    var tlsCert: String?

    @Option(help: "PEM private key of --tls-cert.")
    var tlsKey: String?

    @Option(help: "Seconds a job waits for a connected remote worker that holds its debug files before any idle worker may take it.")
    var affinityWait: Double = 2

    @Option(help: "Alert rules file (JSON, docs/alerts.md): crash and hang alerts to webhooks and mail.")
    var alerts: String?

    @Option(help: "Least severe log messages printed.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        guard (master.workers ?? 0) >= 0 else { throw ValidationError("--workers must be 0 or more") }
        try master.validate()
        guard maxBody > 0, maxReport > 0 else { throw ValidationError("--max-body and --max-report must be positive") }
        guard maxBatchInflate > 0, (0.001...86_400).contains(maxBatchCpu) else {
            throw ValidationError("--max-batch-inflate must be positive and --max-batch-cpu between 0.001 and 86400 seconds")
        }
        guard ingestRate >= 0, ingestBurst >= 1 else {
            throw ValidationError("--ingest-rate must not be negative and --ingest-burst must be at least 1")
        }
        guard (1...64).contains(parsers), parseTimeout > 0 else {
            throw ValidationError("--parsers must be between 1 and 64 and --parse-timeout positive")
        }
        guard affinityWait >= 0 else { throw ValidationError("--affinity-wait must not be negative") }
        guard [headerTimeout, bodyTimeout, idleTimeout].allSatisfy({ $0 >= 0 && $0.isFinite }) else {
            throw ValidationError("--header-timeout, --body-timeout and --idle-timeout must be 0 or more seconds")
        }
        guard bodyMinRate >= 0, maxConnections >= 0, maxConnectionsPerAddress >= 0 else {
            throw ValidationError("--body-min-rate, --max-connections and --max-connections-per-address must not be negative")
        }
        guard symbolicateTimeout > 0, requestDrain >= 0 else {
            throw ValidationError("--symbolicate-timeout must be positive and --request-drain not negative")
        }
    }

    func run() async throws {
        SystemCall.keepFreedMemoryForReuse()
        // Each client connection is a descriptor: --max-connections is kept below the limit.
        SystemCall.raiseOpenDescriptorLimit()
        let level = logLevel
        LoggingSystem.bootstrap { EscapingLogHandler.standardError(label: $0, level: level) }
        let metrics = ServerMetrics.bootstrap()
        let logger = Logger(label: "stackline.serve")
        // A bad rules file stops serve before anything starts, naming the file and the field.
        var rules: AlertConfiguration?
        if let alerts {
            do { rules = try AlertRulesParser.load(path: alerts, environment: processEnvironment.variables) } catch { throw fail("stackline serve: \(error.description)") }
        }
        let masterConfig = try master.configuration(command: "serve")
        let db = try database.openOrCreate()
        let services = rules.map { [AlertService(db: db, configuration: $0, logger: Logger(label: "stackline.alerts"))] } ?? []
        let config = ServerConfiguration(
            host: listen.host, port: listen.port, master: masterConfig,
            limits: ServerLimits(
                maxBodyBytes: maxBody, maxReportBytes: maxReport, ingestRate: ingestRate, ingestBurst: ingestBurst,
                symbolicateTimeout: symbolicateTimeout, parsers: parsers, parseTimeout: parseTimeout,
                batchInflateBytes: maxBatchInflate, batchCPUSeconds: maxBatchCpu),
            requestDrainSeconds: requestDrain, tls: tlsCert.map { ($0, tlsKey ?? "") }, affinityWaitSeconds: affinityWait,
            connections: ConnectionLimits(
                headerTimeout: headerTimeout, bodyTimeout: bodyTimeout, bodyMinimumRate: bodyMinRate, idleTimeout: idleTimeout,
                maxConnections: maxConnections, maxConnectionsPerAddress: maxConnectionsPerAddress))
        do {
            try await StacklineServer(configuration: config, db: db, store: master.store.store, logger: logger).run(metrics: metrics, services: services)
        } catch let error as TLSSetupError {
            throw fail("stackline serve: \(error.description)")
        }
    }
}

/// `HOST:PORT`, `:PORT` (all interfaces) or `[IPv6]:PORT`.
struct ListenAddress: ExpressibleByArgument, CustomStringConvertible {
    var host: String
    var port: Int

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    init?(argument: String) {
        guard let colon = argument.lastIndex(of: ":"), let port = Int(argument[argument.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(argument[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.host = host.isEmpty ? "0.0.0.0" : host
        self.port = port
    }

    var description: String { "\(host):\(port)" }
    var defaultValueDescription: String { description }
}
