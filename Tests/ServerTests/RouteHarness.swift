import Foundation
import HTTPTypes
import Hummingbird
import Intake
import IsolatedParsing
import Logging
import Master
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Storage
import SymbolStore
import TestSupport
import Testing

@testable import Server

/// The router of `stackline serve`, built in process over real collaborators in a temporary
/// directory: a real database, a real symbol store, the real group-commit writer and queries.
/// Only the parser runs in process (serve's parse children are processes, which this tier
/// leaves to EndToEndTests) and the symcache indexer is the real one pointed at the real CLI.
final class RouteHarness: Sendable {
    /// The temporary directory (a `TempDirectory`'s path: that type is not Sendable).
    let root: String
    let db: ServiceDatabase
    let store: SymbolStoreDirectory
    var dbPath: String { db.path }

    /// swift-metrics takes one factory per process; every harness shares it.
    static let metrics = ServerMetrics.bootstrap()

    /// `clock`: the database's clock, and so the routes' (`deps.clock` is the database); the
    /// system's unless a test moves time itself.
    init(clock: @escaping ServiceDatabase.Clock = ServiceDatabase.systemClock) throws {
        root = try TempDirectory("server-tests").path
        db = try ServiceDatabase(path: root + "/data/stackline.sqlite", clock: clock)
        let symbols = root + "/symbols"
        try FileManager.default.createDirectory(atPath: symbols, withIntermediateDirectories: true)
        store = SymbolStoreDirectory(root: symbols)
    }

    /// A second node on `other`'s database and symbol store, as a second `serve` process would
    /// be: its own connections, its own routes.
    init(sharing other: RouteHarness) throws {
        root = try TempDirectory("server-tests").path
        db = try ServiceDatabase(path: other.dbPath)
        store = other.store
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func dependencies(_ limits: ServerLimits = ServerLimits()) -> ServerDependencies {
        let logger = Logger(label: "server-tests")
        return ServerDependencies(
            queries: DatabaseQueries(db: db, store: store), store: store,
            writer: GroupCommitWriter(intake: ReportIntake(db: db, parser: InProcessParser()), commit: GroupCommit(db: db)),
            indexer: SymbolCacheIndexer(executable: TestPaths.stackline, storeRoot: store.root, logger: logger),
            clock: StoreClock(db), limits: limits, census: WorkerCensus(),
            worker: WorkerLaunch(executable: TestPaths.worker, arguments: []), metrics: Self.metrics, logger: logger,
            // As `serve` does: the database's key, the first node's own when it has none yet.
            sessionKey: (try? db.tokens.sessionKey(proposing: WebSession.newKey())) ?? WebSession.newKey())
    }

    /// Runs `body` against the router `makeRouter` builds, served by a real `Application` on a
    /// loopback port and shut down gracefully before this returns, so no test's server outlives it.
    func withRouter(_ limits: ServerLimits = ServerLimits(), _ body: @escaping @Sendable (RouteClient) async throws -> Void) async throws {
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        // Port 0, the kernel's pick at bind time: no other test process can take it in between.
        let app = Application(
            router: StacklineServer.makeRouter(deps: dependencies(limits)),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                listening.yield(channel.localAddress?.port ?? 0)
                listening.finish()
            })
        let services = ServiceGroup(services: [app], logger: Logger(label: "server-tests"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // A server that never listens (its bind failed) must not leave the wait below hanging.
                defer { listening.finish() }
                try await services.run()
            }
            guard let port = await ports.first(where: { _ in true }), port > 0 else {
                await services.triggerGracefulShutdown()
                try await group.waitForAll()
                throw TestSupportError("the route harness's server never listened")
            }
            do {
                try await body(RouteClient(port: port))
            } catch {
                await services.triggerGracefulShutdown()
                throw error
            }
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
        }
    }

    /// `withRouter`, handing back what `body` returns.
    func withRouterReturning<T: Sendable>(_ body: @escaping @Sendable (RouteClient) async throws -> T) async throws -> T {
        let result = Locked<T?>(nil)
        try await withRouter { client in
            let value = try await body(client)
            result.mutate { $0 = value }
        }
        return try #require(result.value)
    }

    /// A new token of `scope`, as `tokens create` makes it.
    func token(_ scope: TokenScope, namespace: String? = nil) throws -> String {
        try db.tokens.create(scope: scope, namespace: namespace).token
    }
}

/// One answer: status, headers, body, and the body as JSON when it is.
struct RouteAnswer: CustomStringConvertible {
    var status: Int
    var headers: HTTPFields
    var body: Data
    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: body) as? [String: Any] }
    var description: String { "\(status) \(text.prefix(2000))" }

    /// The `{"error": "…"}` shape every refusal has (docs/openapi.yaml), its message.
    var error: String? {
        guard let json, json.count == 1 else { return nil }
        return json["error"] as? String
    }
}

/// A plain HTTP/1.1 client over NIO, one connection per request. Not URLSession: it would keep
/// and send cookies, follow the 303s the sign-in tests read, add Accept-Encoding and decompress,
/// and its documentation reserves Host, Authorization and Content-Length for itself. This sends
/// the request a test names and reads the answer's bytes.
struct RouteClient: Sendable {
    let port: Int

    func send(
        _ method: HTTPRequest.Method, _ uri: String, token: String? = nil, body: Data? = nil, headers: [String: String] = [:]
    ) async throws -> RouteAnswer {
        var fields = HTTPHeaders()
        // The authority the tests expect in answers built from it (the SDK configuration's
        // default URL, the sign-in's Origin check): `localhost`, not 127.0.0.1:port.
        fields.add(name: "Host", value: "localhost")
        if let token { fields.replaceOrAdd(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { fields.replaceOrAdd(name: name, value: value) }
        // Content-Length whenever there is a body, even an empty one, and no framing header when
        // there is none: what the tests of declared sizes and of bodyless POSTs were written against.
        if let body { fields.replaceOrAdd(name: "Content-Length", value: "\(body.count)") }
        let head = HTTPRequestHead(version: .http1_1, method: NIOHTTP1.HTTPMethod(rawValue: method.rawValue), uri: uri, headers: fields)
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                var encoder = HTTPRequestEncoder.Configuration()
                encoder.automaticallySetFramingHeaders = false
                try channel.pipeline.syncOperations.addHTTPClientHandlers(encoderConfiguration: encoder)
                return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
            }
        }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(.head(head))
            if let body, !body.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body)))) }
            try await outbound.write(.end(nil))
            var answer: RouteAnswer?
            for try await part in inbound {
                switch part {
                case .head(let head):
                    var fields = HTTPFields()
                    for (name, value) in head.headers {
                        guard let name = HTTPField.Name(name) else { throw TestSupportError("\(uri): answer header '\(name)'") }
                        fields.append(HTTPField(name: name, value: value))
                    }
                    answer = RouteAnswer(status: Int(head.status.code), headers: fields, body: Data())
                case .body(let buffer):
                    answer?.body.append(contentsOf: buffer.readableBytesView)
                case .end:
                    if let answer { return answer }
                }
            }
            throw TestSupportError("\(method) \(uri): the connection closed before the whole answer")
        }
    }
}

/// The minimal Apple crash report of docs/sdk-protocol.md, made distinct by its process id.
func appleCrash(_ n: Int) throws -> Data {
    let doc = try String(contentsOfFile: packageRoot + "/docs/sdk-protocol.md", encoding: .utf8)
    let text = try fencedBlock(after: "The first payload is this minimal Apple crash report", in: doc)
    return Data(text.replacingOccurrences(of: "Prism [4242]", with: "Prism [\(n)]").utf8)
}

/// The fenced block after the first line containing `marker`.
func fencedBlock(after marker: String, in text: String) throws -> String {
    let start = try #require(text.range(of: marker), "no '\(marker)'")
    let rest = text[start.upperBound...]
    let open = try #require(rest.range(of: "```"))
    let body = rest[open.upperBound...].drop { $0 != "\n" }.dropFirst()
    let close = try #require(body.range(of: "\n```"))
    return String(body[..<close.lowerBound]) + "\n"
}

/// gzip's own compression (`gzip -n`), not ours.
func gzipped(_ data: Data) throws -> Data {
    let dir = try TempDirectory("gz")
    defer { dir.remove() }
    try data.write(to: URL(fileURLWithPath: dir.file("r")))
    _ = try runChecked("gzip", ["-n", dir.file("r")])
    return try Data(contentsOf: URL(fileURLWithPath: dir.file("r.gz")))
}

/// SHA-256 by coreutils' sha256sum: the digest oracle.
func sha256sum(_ data: Data) throws -> String {
    String(try runProcess("sha256sum", [], stdin: data).stdout.prefix(64))
}

/// The value of one sample of `/metrics`' Prometheus text (0 when absent).
func metricValue(_ text: String, _ sample: String) -> Int {
    for line in text.split(separator: "\n") where line.hasPrefix(sample + " ") {
        return Int(Double(line.dropFirst(sample.count + 1)) ?? 0)
    }
    return 0
}
