import Hummingbird
import JobQueue

/// The per-request context every route gets: Hummingbird's core storage plus the token that
/// authenticated the request (set by `RequireScope`; nil on `/healthz`, `/readyz`).
public struct StacklineRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The verified token, once `RequireScope` has run.
    public var token: TokenRecord?

    public init(source: Source) {
        coreContext = .init(source: source)
        token = nil
    }

    /// The authenticated token; routes behind `RequireScope` always have one.
    public func requireToken() throws -> TokenRecord {
        guard let token else { throw APIError.unauthorized("missing Authorization: Bearer token") }
        return token
    }
}
