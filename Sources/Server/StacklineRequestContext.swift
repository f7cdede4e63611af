import Foundation
import Hummingbird
import Storage

/// The per-request context every route gets: Hummingbird's core storage plus the token that
/// authenticated the request (set by `RequireScope`; nil on `/healthz`, `/readyz`).
public struct StacklineRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The verified token, once `RequireScope` has run.
    public var token: TokenRecord? {
        didSet { facts.tokenId = token?.id }
    }
    /// The peer's IP address (a remote worker's, as `stackline workers` lists it).
    public let remoteAddress: String?
    /// Shared with the middleware outside `RequireScope` (contexts are values): the request log
    /// names the token's id, never its secret, so requests can be told apart per client.
    let facts = RequestFacts()

    public init(source: Source) {
        coreContext = .init(source: source)
        token = nil
        remoteAddress = source.channel.remoteAddress?.ipAddress
    }

    /// The authenticated token; routes behind `RequireScope` always have one.
    public func requireToken() throws -> TokenRecord {
        guard let token else { throw APIError.unauthorized("missing Authorization: Bearer token") }
        return token
    }
}

/// What inner middleware learned about a request, for the request log.
/// Sendable: `lock` guards `id`.
final class RequestFacts: @unchecked Sendable {
    private let lock = NSLock()
    private var id: Int64?
    var tokenId: Int64? {
        get { lock.withLock { id } }
        set { lock.withLock { id = newValue } }
    }
}
