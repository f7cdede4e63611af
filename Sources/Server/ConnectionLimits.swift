import HTTPTypes
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// How long a client may take and how many connections it may hold (`stackline serve`'s
/// `--header-timeout`, `--body-timeout`, `--body-min-rate`, `--idle-timeout`, `--max-connections`,
/// `--max-connections-per-address`). A connection costs a descriptor for as long as it is open, so
/// every way of keeping one open without sending a request at a useful rate has a deadline, and
/// the descriptors connections may take are capped below the process's limit. 0 turns a limit off.
public struct ConnectionLimits: Sendable {
    /// Seconds to receive a request's whole head: from accept (TLS handshake included) for the
    /// first request of a connection, from the first byte of the next one on a kept-alive one.
    public var headerTimeout: Double
    /// Seconds a request's body gets at the least, from the end of its head …
    public var bodyTimeout: Double
    /// … plus one more second per this many bytes of body received: a body slower than this
    /// rate on average runs out of time, a faster one never does.
    public var bodyMinimumRate: Int
    /// Seconds a kept-alive connection may wait for its next request.
    public var idleTimeout: Double
    /// Connections open at once, all clients together; lowered at start to fit the descriptor
    /// limit (`effectiveMaxConnections`). Past it the server stops accepting until one closes:
    /// new clients wait in the kernel's accept queue rather than being refused.
    public var maxConnections: Int
    /// Connections open at once from one IPv4 address or one IPv6 /64; past it a new connection
    /// is closed as soon as it is accepted.
    public var maxConnectionsPerAddress: Int

    public init(
        headerTimeout: Double = 20, bodyTimeout: Double = 20, bodyMinimumRate: Int = 500, idleTimeout: Double = 30,
        maxConnections: Int = 1024, maxConnectionsPerAddress: Int = 128
    ) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.bodyMinimumRate = bodyMinimumRate
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
    }

    /// Descriptors kept for everything but client connections: SQLite's files for each pooled
    /// connection, the workers' and parsers' pipes, debug files being read, event loops. An idle
    /// `serve` holds 26 (/proc/PID/fd); the rest is headroom for SQLite's readers, symbolicate's
    /// workers and debug files being served, and for the few connections one accept may take
    /// past the cap.
    static let reservedDescriptors = 96

    /// `maxConnections`, lowered so that connections alone can never exhaust the descriptor
    /// limit: past it accept fails with EMFILE (NIO backs off and retries), but so would SQLite,
    /// the workers' pipes and the store. Nil: no cap.
    public func effectiveMaxConnections(descriptorLimit: Int?) -> Int? {
        guard maxConnections > 0 else { return nil }
        guard let descriptorLimit else { return maxConnections }
        return max(1, min(maxConnections, descriptorLimit - Self.reservedDescriptors))
    }

    static func amount(_ seconds: Double) -> TimeAmount? {
        seconds > 0 ? .nanoseconds(Int64(min(seconds, 1e9) * 1e9)) : nil
    }
}

/// Open connections per client address, shared by every event loop's connections.
final class ConnectionsPerAddress: Sendable {
    /// An IPv4 address, or the /64 of an IPv6 one (one host's usual allocation; a client holding
    /// a /64 could otherwise spread over 2^64 addresses).
    struct Key: Hashable {
        var high: UInt64
        var low: UInt64

        init?(_ address: SocketAddress?) {
            switch address {
            case .v4(let v4):
                high = 0
                low = UInt64(UInt32(bigEndian: v4.address.sin_addr.s_addr))
            case .v6(let v6):
                let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
                guard bytes.count == 16 else { return nil }
                // ::ffff:a.b.c.d (an IPv4 client of a dual-stack listener) counts as a.b.c.d.
                if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
                    high = 0
                    low = bytes[12..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                } else {
                    high = 1
                    low = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                }
            default:
                return nil
            }
        }
    }

    private let counts = Mutex<[Key: Int]>([:])
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Counts a new connection from `key`; false (and not counted) when `key` is at the limit.
    func open(_ key: Key) -> Bool {
        counts.withLock { counts in
            let open = counts[key, default: 0]
            guard open < limit else { return false }
            counts[key] = open + 1
            return true
        }
    }

    func close(_ key: Key) {
        counts.withLock { counts in
            let open = counts[key, default: 0]
            if open <= 1 { counts[key] = nil } else { counts[key] = open - 1 }
        }
    }
}

/// One per connection, after the HTTP codec: the per-address cap, the head deadline and the body
/// deadline. The idle timeout between requests is Hummingbird's (`HTTPConnectionStateHandler`).
///
/// A head arriving slowly decodes to nothing until it is complete, so the first bytes of the next
/// request show only as `channelReadComplete` (which the codec passes on for every socket read).
/// No timer moves per read: the body deadline is checked when it fires and rescheduled to where
/// the bytes received since then push it.
///
/// Why not NIO's `IdleStateHandler`: it measures silence, and a slowloris is never silent (one
/// byte every few seconds); what matters is how long the head or body has taken in all.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum Phase {
        /// Between requests: the head timer runs once a byte of the next head has arrived (or
        /// from accept, for the first).
        case awaitingHead
        case readingBody
        /// The whole request is in; its answer is being made.
        case responding
    }

    private let headerTimeout: TimeAmount?
    private let bodyTimeout: TimeAmount?
    private let bodyMinimumRate: Int
    private let perAddress: ConnectionsPerAddress?
    private let logger: Logger

    private var phase = Phase.awaitingHead
    private var activated = false
    private var counted: ConnectionsPerAddress.Key?
    /// Requests whose head was read and whose answer has not ended (more than one when pipelined).
    private var unanswered = 0
    private var headTimer: Scheduled<Void>?
    private var bodyTimer: Scheduled<Void>?
    private var bodyStart = NIODeadline.now()
    private var bodyBytes = 0

    init(limits: ConnectionLimits, perAddress: ConnectionsPerAddress?, logger: Logger) {
        headerTimeout = ConnectionLimits.amount(limits.headerTimeout)
        bodyTimeout = ConnectionLimits.amount(limits.bodyTimeout)
        bodyMinimumRate = max(0, limits.bodyMinimumRate)
        self.perAddress = perAddress
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { activate(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        activate(context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        headTimer?.cancel()
        headTimer = nil
        bodyTimer?.cancel()
        bodyTimer = nil
        if let counted, let perAddress {
            perAddress.close(counted)
            self.counted = nil
        }
    }

    private func activate(context: ChannelHandlerContext) {
        guard !activated else { return }
        activated = true
        if let perAddress, let key = ConnectionsPerAddress.Key(context.channel.remoteAddress) {
            guard perAddress.open(key) else {
                logger.debug(
                    "connection refused: too many from one address",
                    metadata: ["client": "\(context.channel.remoteAddress?.ipAddress ?? "?")", "limit": "\(perAddress.limit)"])
                // Closed on the next turn of the loop, not while Hummingbird is still adding this
                // connection's handlers (a pipeline torn down under it fails its setup).
                context.eventLoop.assumeIsolatedUnsafeUnchecked().execute { context.close(promise: nil) }
                return
            }
            counted = key
        }
        armHeadTimer(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            headTimer?.cancel()
            headTimer = nil
            unanswered += 1
            phase = .readingBody
            bodyStart = .now()
            bodyBytes = 0
        case .body(let buffer):
            bodyBytes &+= buffer.readableBytes
        case .end:
            bodyTimer?.cancel()
            bodyTimer = nil
            // Answered already (an early 401 or 413 before the body was read) or not yet.
            phase = unanswered == 0 ? .awaitingHead : .responding
        }
        context.fireChannelRead(data)
    }

    /// Timers start only here, when a read ended inside a head or a body: a request that arrives
    /// whole in one read (most of them) never schedules one.
    func channelReadComplete(context: ChannelHandlerContext) {
        switch phase {
        case .awaitingHead:
            // Bytes arrived but no head was completed yet: the next request has begun.
            armHeadTimer(context: context)
        case .readingBody:
            if bodyTimer == nil, let bodyTimeout { scheduleBodyCheck(context: context, at: bodyStart + bodyTimeout) }
        case .responding:
            break
        }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            unanswered -= 1
            if unanswered == 0, phase == .responding { phase = .awaitingHead }
        }
        context.write(data, promise: promise)
    }

    private func armHeadTimer(context: ChannelHandlerContext) {
        guard let headerTimeout, headTimer == nil else { return }
        headTimer = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: headerTimeout) {
            self.headTimer = nil
            guard self.phase == .awaitingHead else { return }
            self.logger.debug(
                "connection closed: request head not received in time",
                metadata: ["client": "\(context.channel.remoteAddress?.ipAddress ?? "?")"])
            guard self.unanswered == 0 else {
                context.close(promise: nil)
                return
            }
            // Nothing else is being answered on this connection, so a 408 is a well-formed
            // answer to the request that did not arrive. The flush hands it to the socket at
            // once; the close does not wait for it, since under TLS before the handshake is done
            // it would wait forever (and the 408 is dropped, which is fine).
            context.write(
                self.wrapOutboundOut(
                    .head(HTTPResponse(status: .requestTimeout, headerFields: [.connection: "close", .contentLength: "0"]))),
                promise: nil)
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
            context.close(promise: nil)
        }
    }

    /// The body's deadline: `bodyTimeout` after its head, plus a second per `bodyMinimumRate`
    /// bytes received so far.
    private var bodyDeadline: NIODeadline {
        let base = bodyStart + (bodyTimeout ?? .zero)
        guard bodyMinimumRate > 0 else { return base }
        let (earned, overflow) = Int64(bodyBytes / bodyMinimumRate).multipliedReportingOverflow(by: 1_000_000_000)
        return base + .nanoseconds(overflow ? .max / 4 : earned)
    }

    private func scheduleBodyCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        bodyTimer?.cancel()
        bodyTimer = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(deadline: deadline) {
            self.bodyTimer = nil
            guard self.phase == .readingBody else { return }
            let deadline = self.bodyDeadline
            guard NIODeadline.now() >= deadline else {
                self.scheduleBodyCheck(context: context, at: deadline)
                return
            }
            self.logger.debug(
                "connection closed: request body too slow",
                metadata: ["client": "\(context.channel.remoteAddress?.ipAddress ?? "?")", "bytes": "\(self.bodyBytes)"])
            // The request is half-read and its handler may already be answering: no answer can
            // be slipped in, so the connection just ends (the client sees its upload cut).
            context.close(promise: nil)
        }
    }
}
