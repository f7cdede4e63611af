import Foundation
import Intake
import IsolatedParsing
import Storage
import Logging
import Master
import SymbolStore

/// Limits and knobs of `stackline serve` (docs/serve.md lists them with their options).
public struct ServerLimits: Sendable {
    /// Largest request body read, compressed or not, in bytes (413 past it).
    public var maxBodyBytes: Int
    /// Largest report after inflating a gzip body (a bomb stops here).
    public var maxReportBytes: Int
    /// Requests per second an ingest token may make to the ingest endpoints; 0 = no limit.
    public var ingestRate: Double
    /// How many requests an ingest token may make at once before the rate applies.
    public var ingestBurst: Double
    /// Seconds `POST /api/v1/symbolicate` waits for its worker before killing it.
    public var symbolicateTimeout: Double
    /// On-the-spot symbolications running at once (each is one worker process).
    public var symbolicateConcurrency: Int
    /// Bytes all the payloads of one SDK batch may inflate to, together; past it the batch's
    /// remaining reports are refused (`SDKBatchIntake.Budget`).
    public var batchInflateBytes: Int
    /// CPU one SDK batch may use; past it the batch's remaining reports are refused.
    public var batchCPUSeconds: Double
    /// Parse children (`stackline-worker --parse`): reports parsed at once.
    public var parsers: Int
    /// Seconds one input's parse may take before its child is killed and the input refused.
    public var parseTimeout: Double

    public init(
        maxBodyBytes: Int = 16 << 20, maxReportBytes: Int = 64 << 20, ingestRate: Double = 100, ingestBurst: Double = 200,
        symbolicateTimeout: Double = 30, symbolicateConcurrency: Int = 2, parsers: Int = 2, parseTimeout: Double = 10,
        batchInflateBytes: Int = 128 << 20, batchCPUSeconds: Double = 2
    ) {
        self.batchInflateBytes = batchInflateBytes
        self.batchCPUSeconds = batchCPUSeconds
        self.parsers = parsers
        self.parseTimeout = parseTimeout
        self.maxBodyBytes = maxBodyBytes
        self.maxReportBytes = maxReportBytes
        self.ingestRate = ingestRate
        self.ingestBurst = ingestBurst
        self.symbolicateTimeout = symbolicateTimeout
        self.symbolicateConcurrency = symbolicateConcurrency
    }
}

/// How to start a `stackline-worker` (the master's workers and on-the-spot symbolication alike).
public struct WorkerLaunch: Sendable {
    public var executable: String
    public var arguments: [String]

    public init(executable: String, arguments: [String]) {
        self.executable = executable
        self.arguments = arguments
    }
}

/// Everything a route may use, built once by `stackline serve` and handed to every
/// `add…Routes(to:deps:)` function.
public struct ServerDependencies: Sendable {
    public var db: ServiceDatabase
    public var store: SymbolStoreDirectory
    /// The one place bytes become reports and jobs (`ReportIntake`); ingest routes go through it.
    public var intake: ReportIntake
    /// The ingest endpoint's group-commit writer: concurrent reports share transactions.
    public var writer: GroupCommit
    public var authenticator: Authenticator
    public var limits: ServerLimits
    /// Per-token rate limit for ingest-scope tokens (`POST /api/v1/reports`, `POST /api/v1/ingest`).
    public var ingestLimiter: RateLimiter
    /// Live local workers (for `/readyz` and `/metrics`).
    public var census: WorkerCensus
    /// Workers on other machines; nil when this server runs no master.
    public var remote: RemoteWorkerPool?
    public var worker: WorkerLaunch
    public var metrics: ServerMetrics
    public var logger: Logger
    /// The server speaks TLS itself (`--tls-cert`): every client reached it over https.
    public var servesTLS = false
    /// Builds the symcaches of uploaded debug files, outside this process.
    public var indexer: SymbolCacheIndexer
    /// Where handlers run blocking work (SQLite, disk, inflate, AES, parse): never on the
    /// event loops or the cooperative pool (`BlockingWork`).
    public var blocking = BlockingWork.shared

    public init(
        db: ServiceDatabase, store: SymbolStoreDirectory, limits: ServerLimits, census: WorkerCensus, remote: RemoteWorkerPool? = nil,
        worker: WorkerLaunch, metrics: ServerMetrics, logger: Logger
    ) {
        self.remote = remote
        self.db = db
        self.store = store
        intake = ReportIntake(
            db: db,
            parser: ParserPool(
                .init(executable: worker.executable, arguments: worker.arguments, size: limits.parsers, timeoutSeconds: limits.parseTimeout),
                logger: logger))
        writer = GroupCommit(db: db)
        authenticator = Authenticator(tokens: db.tokens, blocking: blocking)
        self.limits = limits
        ingestLimiter = RateLimiter(rate: limits.ingestRate, burst: limits.ingestBurst)
        self.census = census
        self.worker = worker
        self.metrics = metrics
        self.logger = logger
        indexer = SymbolCacheIndexer(executable: SymbolCacheIndexer.currentExecutable, storeRoot: store.root, logger: logger)
    }

    /// Applies the ingest rate limit when the request's token is an ingest token (admin
    /// tokens, used by operators and benchmarks, are not limited).
    public func checkIngestRate(_ token: TokenRecord) throws {
        if token.scope == .ingest { try ingestLimiter.check(token.id) }
    }
}
