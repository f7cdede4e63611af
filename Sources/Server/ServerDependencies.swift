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

/// Everything a route may use, handed to every `add…Routes(to:deps:)` function. The collaborators
/// that touch the database, the disk or the clock are protocols (`ServerCollaborators.swift`):
/// `stackline serve` passes the real ones (`init(db:store:…)`), ServerTests the same real ones
/// over a temporary directory, with a parser in process and a clock it sets.
public struct ServerDependencies: Sendable {
    /// Every read and write a route makes in the database. Blocking: call it in `blocking.run`.
    public var queries: any ServerQueries
    /// The symbol store. Blocking (disk): call it in `blocking.run`.
    public var store: any SymbolStoring
    /// Where bytes become stored reports: its intake parses (blocking), `commit` stores them in
    /// transactions shared with concurrent requests, on the writer's own thread.
    public var writer: any ReportWriter
    /// Builds the symcaches of uploaded debug files, outside this process.
    public var indexer: any SymbolCacheIndexing
    /// Milliseconds since the epoch, the time the database stamps rows with.
    public var clock: any ServerClock
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
    /// The key web session cookies are signed with (`WebSession`): the database's, so every
    /// node sharing it accepts the others' cookies.
    public var sessionKey: [UInt8]
    /// The server speaks TLS itself (`--tls-cert`): every client reached it over https.
    public var servesTLS = false
    /// Where handlers run blocking work (SQLite, disk, inflate, AES, parse): never on the
    /// event loops or the cooperative pool (`BlockingWork`).
    public let blocking: BlockingWork

    /// Every collaborator given: what tests use.
    public init(
        queries: any ServerQueries, store: any SymbolStoring, writer: any ReportWriter, indexer: any SymbolCacheIndexing,
        clock: any ServerClock, limits: ServerLimits, census: WorkerCensus, remote: RemoteWorkerPool? = nil, worker: WorkerLaunch,
        metrics: ServerMetrics, logger: Logger, blocking: BlockingWork = .shared, sessionKey: [UInt8] = WebSession.newKey()
    ) {
        self.sessionKey = sessionKey
        self.queries = queries
        self.store = store
        self.writer = writer
        self.indexer = indexer
        self.clock = clock
        self.blocking = blocking
        authenticator = Authenticator(tokens: queries.tokens, clock: clock, blocking: blocking)
        self.limits = limits
        ingestLimiter = RateLimiter(rate: limits.ingestRate, burst: limits.ingestBurst)
        self.census = census
        self.remote = remote
        self.worker = worker
        self.metrics = metrics
        self.logger = logger
    }

    /// The real collaborators of `stackline serve`: the database (its clock too), the store
    /// directory, parse children (`stackline-worker --parse`) feeding the group-commit writer,
    /// and the symcache indexer child.
    /// `fetched`: the symbol sources' cache (`--symbol-source`), served behind the store.
    public init(
        db: any ServiceStore, store: SymbolStoreDirectory, fetched: SymbolStoreDirectory? = nil, sessionKey: [UInt8], limits: ServerLimits,
        census: WorkerCensus, remote: RemoteWorkerPool? = nil, worker: WorkerLaunch, metrics: ServerMetrics, logger: Logger
    ) {
        let parser = ParserPool(
            .init(executable: worker.executable, arguments: worker.arguments, size: limits.parsers, timeoutSeconds: limits.parseTimeout),
            logger: logger)
        self.init(
            queries: DatabaseQueries(db: db, store: store),
            store: fetched.map { StoreWithFetchedFiles(store: store, fetched: $0) } ?? store,
            writer: GroupCommitWriter(intake: ReportIntake(db: db, parser: parser), commit: GroupCommit(db: db)),
            indexer: SymbolCacheIndexer(executable: SymbolCacheIndexer.currentExecutable, storeRoot: store.root, logger: logger),
            clock: StoreClock(db), limits: limits, census: census, remote: remote, worker: worker, metrics: metrics, logger: logger,
            sessionKey: sessionKey)
    }

    /// Applies the ingest rate limit when the request's token is an ingest token (admin
    /// tokens, used by operators and benchmarks, are not limited).
    public func checkIngestRate(_ token: TokenRecord) throws {
        if token.scope == .ingest { try ingestLimiter.check(token.id) }
    }
}
