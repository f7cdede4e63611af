import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import NIOSSL
import Storage
import Logging
import Master
import ServiceLifecycle
import SymbolStore
import SystemCalls

/// Settings of one `stackline serve` run.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var master: MasterConfiguration
    public var limits: ServerLimits
    /// Seconds in-flight requests get after SIGTERM before the server stops waiting for them.
    public var requestDrainSeconds: Double
    /// PEM certificate chain and private key: HTTPS instead of HTTP.
    public var tls: (certificate: String, key: String)?
    /// Seconds a job whose debug files a connected remote worker holds waits for that worker
    /// before any other may take it (`--affinity-wait`).
    public var affinityWaitSeconds: Double
    /// Deadlines and caps on client connections.
    public var connections: ConnectionLimits

    public init(
        host: String, port: Int, master: MasterConfiguration, limits: ServerLimits, requestDrainSeconds: Double = 10,
        tls: (certificate: String, key: String)? = nil, affinityWaitSeconds: Double = 2, connections: ConnectionLimits = .init()
    ) {
        self.affinityWaitSeconds = affinityWaitSeconds
        self.connections = connections
        self.host = host
        self.port = port
        self.master = master
        self.limits = limits
        self.requestDrainSeconds = requestDrainSeconds
        self.tls = tls
    }
}

/// A TLS certificate or key that cannot be used.
public struct TLSSetupError: Error, CustomStringConvertible {
    public var description: String
}

/// `stackline serve`: the HTTP API and the master in one process, under one ServiceGroup.
///
/// On SIGTERM/SIGINT the group shuts down in reverse order: the HTTP server first (stops
/// accepting, lets in-flight requests finish), then the master (no new claims, in-flight jobs
/// finish within the drain time). A report answered with 2xx was committed before its answer.
public struct StacklineServer: Sendable {
    public let configuration: ServerConfiguration
    public let db: any ServiceStore
    public let store: SymbolStoreDirectory
    public let logger: Logger

    public init(configuration: ServerConfiguration, db: any ServiceStore, store: SymbolStoreDirectory, logger: Logger) {
        self.configuration = configuration
        self.db = db
        self.store = store
        self.logger = logger
    }

    /// Builds the router with every route group, for `run()` and for tests of single routes.
    public static func makeRouter(deps: ServerDependencies) -> Router<StacklineRequestContext> {
        // HEAD wherever GET is served (RFC 9110 §9.3.2): Hummingbird runs the GET route and
        // sends its status and headers (Content-Length included) without the body.
        let router = Router(context: StacklineRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: AnswerCaching())
        router.add(middleware: RequestLogMiddleware(logger: Logger(label: "stackline.http")))
        registerRoutes(on: router, deps: deps)
        return router
    }

    /// HTTP/1.1 with the connection deadlines and the per-address cap, over TLS (swift-nio-ssl)
    /// when a certificate and key are given: TLS 1.2 or 1.3, and under 1.2 only ECDHE key
    /// exchange with AEAD ciphers (forward secret; no CBC, no SHA-1 MACs, no static RSA), the
    /// suites of Mozilla's "intermediate" profile. TLS 1.3's suites all qualify.
    static func serverBuilder(
        tls: (certificate: String, key: String)?, connections: ConnectionLimits = .init(), logger: Logger = Logger(label: "stackline.connections")
    ) throws -> HTTPServerBuilder {
        let perAddress = connections.maxConnectionsPerAddress > 0 ? ConnectionsPerAddress(limit: connections.maxConnectionsPerAddress) : nil
        let http1 = HTTPServerBuilder.http1(
            configuration: .init(
                additionalChannelHandlers: [ConnectionGuard(limits: connections, perAddress: perAddress, logger: logger)],
                idleTimeout: ConnectionLimits.amount(connections.idleTimeout)))
        guard let tls else { return http1 }
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMFile(tls.certificate) } catch {
            throw TLSSetupError(description: "cannot read the certificate chain \(tls.certificate): \(error)")
        }
        guard !chain.isEmpty else { throw TLSSetupError(description: "\(tls.certificate) holds no PEM certificate") }
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(file: tls.key, format: .pem) } catch {
            throw TLSSetupError(description: "cannot read the private key \(tls.key): \(error)")
        }
        var tlsConfiguration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tlsConfiguration.minimumTLSVersion = .tlsv12
        tlsConfiguration.cipherSuiteValues = [
            .TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, .TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            .TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, .TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            .TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, .TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ]
        return try .tls(http1, tlsConfiguration: tlsConfiguration)
    }

    /// Runs until SIGTERM/SIGINT, then drains and returns. `onListening` gets the bound port
    /// (useful with port 0). `services` (the alerts) run beside the master and stop after it.
    public func run(
        metrics: ServerMetrics, services: [any Service] = [], onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        var masterConfig = configuration.master
        masterConfig.handlesSignals = false
        masterConfig.once = false
        let masterLogger = Logger(label: "stackline.master")
        // The pool's completion writer is the dispatcher's too: local and remote completions
        // share transactions.
        let remote = RemoteWorkerPool(
            db: db, config: masterConfig, affinityWaitSeconds: configuration.affinityWaitSeconds,
            groupingRulesPath: masterConfig.groupingRulesPath,
            logger: masterLogger)
        let dispatcher = Dispatcher(db: db, config: masterConfig, logger: masterLogger, remote: remote)
        let (db, blocking) = (self.db, BlockingWork.shared)
        let sessionKey = try await blocking.run { try db.tokens.sessionKey(proposing: WebSession.newKey()) }
        var deps = ServerDependencies(
            db: db, store: store, fetched: masterConfig.symbolSources?.fetchedStore, sessionKey: sessionKey, limits: configuration.limits,
            census: dispatcher.census, remote: remote,
            worker: WorkerLaunch(executable: masterConfig.workerExecutable, arguments: masterConfig.workerArguments),
            metrics: metrics, logger: logger)
        deps.servesTLS = configuration.tls != nil
        let logger = self.logger
        let connectionLogger = Logger(label: "stackline.connections")
        let descriptorLimit = SystemCall.openDescriptorLimit()
        let maxConnections = configuration.connections.effectiveMaxConnections(descriptorLimit: descriptorLimit)
        if let maxConnections, maxConnections < configuration.connections.maxConnections {
            logger.warning(
                "connections capped below --max-connections to fit the descriptor limit (raise it with ulimit -n or LimitNOFILE=)",
                metadata: ["max_connections": "\(maxConnections)", "descriptor_limit": "\(descriptorLimit ?? 0)"])
        }
        let app = Application(
            router: Self.makeRouter(deps: deps),
            server: try Self.serverBuilder(tls: configuration.tls, connections: configuration.connections, logger: connectionLogger),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "stackline",
                // At the cap the server stops accepting: new clients wait in the accept queue
                // until a connection closes (deadlines make sure one does), rather than failing.
                availableConnectionsDelegate: maxConnections.map { MaximumAvailableConnections($0, logger: connectionLogger) }),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                logger.notice("listening", metadata: ["address": "\(configuration.host):\(port)"])
                await onListening(port)
            },
            logger: Logger(label: "stackline.server"))
        // Services stop in reverse order: the HTTP server first, then the master, then the
        // alerts (which see the master's last results).
        var groupConfig = ServiceGroupConfiguration(
            services: services.map { .init(service: $0) } + [
                .init(service: MasterService(dispatcher: dispatcher)),
                .init(service: app),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        // Past this the group cancels what is left: requests still open are cut, and the master
        // releases the leases of jobs still running (they are queued again, nothing is lost).
        groupConfig.maximumGracefulShutdownDuration = .milliseconds(
            Int64((configuration.requestDrainSeconds + masterConfig.drainSeconds + 5) * 1000))
        try await ServiceGroup(configuration: groupConfig).run()
        logger.notice("stopped")
    }
}
