import Foundation
import Hummingbird
import Storage

/// What a token may do: `ingest`, `symbols`, `read`, `worker`, `admin` (admin implies all).
/// One definition, in Storage, where tokens are stored.
public typealias Scope = TokenScope

/// Checks `Authorization: Bearer TOKEN` against the token store.
public final class Authenticator: Sendable {
    private let tokens: TokenStore
    private let lastTouched = LockedDictionary<Int64, Int64>()
    /// `last_used_at` is a write: record it at most this often per token.
    private let touchIntervalMs: Int64 = 60_000
    /// Token rows read within `rowLifetime`, by id: a database read per request showed in the
    /// ingest endpoint's profile (scripts/bench-serve.sh). The secret is still hashed and compared on every request; what
    /// the cache delays is only a revocation (or a new scope) made elsewhere, by at most this.
    private let rows = LockedDictionary<Int64, (row: TokenStore.StoredToken, readAt: ContinuousClock.Instant)>()
    public static let rowLifetime: Duration = .seconds(1)
    /// Where the token row is read and `last_used_at` written: never on the request's thread.
    private let blocking: BlockingWork
    /// The time `last_used_at` records.
    private let clock: any ServerClock

    public init(tokens: TokenStore, clock: any ServerClock, blocking: BlockingWork) {
        self.tokens = tokens
        self.clock = clock
        self.blocking = blocking
    }

    /// The token of the request if it is valid and permits `scope`; 401 without a valid token,
    /// 403 with a valid token of another scope. Neither message repeats the presented token.
    public func authenticate(_ request: Request, scope: Scope) async throws -> TokenRecord {
        try await authenticate(request, scopes: [scope])
    }

    /// As `authenticate(_:scope:)`, for an endpoint any of `scopes` may call.
    public func authenticate(_ request: Request, scopes: [Scope]) async throws -> TokenRecord {
        guard let header = request.headers[.authorization] else {
            throw APIError.unauthorized("missing Authorization: Bearer token")
        }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw APIError.unauthorized("Authorization must be: Bearer TOKEN")
        }
        // Only spaces and tabs can trail the token here (`split` dropped the leading ones);
        // Foundation's CharacterSet trimming showed in the ingest profile (scripts/bench-serve.sh).
        var presented = parts[1]
        while presented.last == " " || presented.last == "\t" { presented.removeLast() }
        guard let token = try await verify(String(presented)) else {
            throw APIError.unauthorized("invalid or revoked token")
        }
        guard scopes.contains(where: token.scope.permits) else {
            let needed = scopes.map(\.rawValue).joined(separator: " or ")
            throw APIError.forbidden("token \(token.id) has scope \(token.scope.rawValue); this endpoint needs \(needed)")
        }
        await recordUse(token)
        return token
    }

    /// The live token `presented` is. Its row comes from the cache while younger than
    /// `rowLifetime`, checked here (a hash and a compare: no hop); otherwise it is read, and the
    /// whole check made, on the pool. Only rows that exist are kept, so the cache holds at most
    /// one entry per real token.
    private func verify(_ presented: String) async throws -> TokenRecord? {
        var missed = false
        let cached = try TokenStore.verify(presented) { id in
            let now = ContinuousClock.now
            if let cached = rows[id], cached.readAt.duration(to: now) < Self.rowLifetime { return cached.row }
            missed = true
            return nil
        }
        guard missed else { return cached }
        return try await blocking.run {
            try TokenStore.verify(presented) { id in
                guard let row = try self.tokens.stored(id: id) else { return nil }
                self.rows[id] = (row, ContinuousClock.now)
                return row
            }
        }
    }

    private func recordUse(_ token: TokenRecord) async {
        let now = clock.now()
        let due = lastTouched.update(token.id) { last in
            if let last, now - last < touchIntervalMs { return (last, false) }
            return (now, true)
        }
        // Best effort: a busy database must not fail an authenticated request.
        if due { _ = try? await blocking.run { try self.tokens.touch(id: token.id, at: now) } }
    }
}

/// Middleware for a route group: authenticates with `scope` and puts the token in the context.
///
///     let group = router.group("api/v1/symbols").add(middleware: RequireScope(.symbols, deps))
public struct RequireScope: RouterMiddleware {
    public typealias Context = StacklineRequestContext
    let scopes: [Scope]
    let authenticator: Authenticator

    /// `also`: further scopes that may call the routes (a remote worker fetches debug files
    /// with its `worker` token).
    public init(_ scope: Scope, also: [Scope] = [], _ deps: ServerDependencies) {
        scopes = [scope] + also
        authenticator = deps.authenticator
    }

    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.token = try await authenticator.authenticate(request, scopes: scopes)
        return try await next(request, context)
    }
}

/// A dictionary behind a lock, for the few per-token tables the server keeps.
/// Sendable: `lock` guards `values`.
final class LockedDictionary<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Key: Value] = [:]

    subscript(key: Key) -> Value? {
        get { lock.withLock { values[key] } }
        set { lock.withLock { values[key] = newValue } }
    }

    /// Runs `body` on the current value (nil if none) and stores what it returns.
    func update<R>(_ key: Key, _ body: (Value?) -> (Value, R)) -> R {
        lock.withLock {
            let (value, result) = body(values[key])
            values[key] = value
            return result
        }
    }
}
