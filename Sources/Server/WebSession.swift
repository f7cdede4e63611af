import Crypto
import Foundation
import Hashing
import Storage
import ReportModel

/// The web view's sign-in cookie.
///
/// The cookie never holds the token. A browser keeps cookies on disk and sends them on every
/// request, and a user expects that signing in to a web page leaves something that ends (on its
/// own, at sign-out, when the token is revoked), not a copy of a long-lived API credential that
/// works forever from wherever it leaks to. So the value is
/// `v3.<token id>.<issued ms>.<expiry ms>.<MAC>`: an HMAC-SHA256, under the database's session
/// key, of the token's id, when the cookie was issued, the expiry and the token's creation time.
/// It cannot be forged or extended without the key, stops working at its expiry, when the token
/// is revoked (each request re-reads the token's row), and at sign-out. It is sent `HttpOnly`
/// (no script reads it), `SameSite=Strict` (no other site's page makes the browser send it: the
/// pages need no CSRF token), `Path=/`, and `Secure` over https (`--tls-cert`, or a TLS proxy).
/// The request log never contains it.
///
/// The key is made at random by the first node that starts on a database and kept there
/// (`web_session_keys`), so every `serve` node sharing the database accepts the cookies the
/// others issue, and a restart signs nobody out.
///
/// Sign-out ends the session on the server, not only in the browser that asked (a copy of the
/// cookie would otherwise work until its expiry): it records, for the token, the time of the
/// sign-out (`web_sign_outs`), and every cookie of that token issued up to then is refused from
/// then on, by every node — every session that token opened, in any browser. One row per token
/// that signed out, so it is bounded by the tokens in the database. Chosen over a deny-list of
/// single sessions because that list grows with every sign-in/sign-out pair a token holder cares
/// to make for 12 hours. Times are the database's clock (`SQLStore.now`): on PostgreSQL every
/// node reads the server's, so a sign-out on one node ends what another issued before it.
public final class WebSession: Sendable {
    /// The cookie's name.
    public static let cookieName = "stackline_session"
    /// How long a sign-in lasts.
    public static let lifetimeMs: Int64 = 12 * 3_600_000

    /// The MAC key's bytes (`SymmetricKey` is not `Sendable`).
    private let key: [UInt8]
    /// Where the token's row and its sign-outs are read.
    private let tokens: TokenStore
    /// The rows are read and written on this pool, never on the request's thread.
    private let blocking: BlockingWork

    /// A new random key, for a database that has none yet (`TokenStore.sessionKey(proposing:)`).
    public static func newKey() -> [UInt8] { SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) } }

    /// A session signer with `key`: the database's (`TokenStore.sessionKey`), so every node agrees.
    public init(key: [UInt8], tokens: TokenStore, blocking: BlockingWork) {
        self.key = key
        self.tokens = tokens
        self.blocking = blocking
    }

    /// A new cookie value for `token`, valid until `now + lifetimeMs`.
    public func value(for token: TokenRecord, now: Int64) -> String {
        let payload = "v3.\(token.id).\(now).\(now + Self.lifetimeMs)"
        return payload + "." + mac(payload, createdAt: token.createdAt)
    }

    /// The live `read` token a cookie value stands for: its MAC is ours, it has not expired nor
    /// been signed out, and the token's row (read on the pool, no cache, so a revocation ends
    /// the session at once, on every node) exists, is not revoked and permits `read`. Nil
    /// otherwise; a missing, malformed or expired cookie is refused before any read.
    public func token(of value: String?, now: Int64) async throws -> TokenRecord? {
        guard let value else { return nil }
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard value.utf8.count <= 200, parts.count == 5, parts[0] == "v3", let id = Int64(parts[1]), let issued = Int64(parts[2]),
            let expiry = Int64(parts[3]), expiry > now
        else { return nil }
        guard let (stored, endedAt) = try await blocking.run({ try self.tokens.storedForSession(id: id) }) else { return nil }
        let token = stored.record
        let expected = mac("v3.\(id).\(issued).\(expiry)", createdAt: token.createdAt)
        // The MAC's bytes must not leak through timing.
        guard ConstantTime.equal(Array(expected.utf8), Array(parts[4].utf8)) else { return nil }
        let signedOut = endedAt.map { issued <= $0 } ?? false
        guard !signedOut, !token.isRevoked, token.scope.permits(.read) else { return nil }
        return token
    }

    /// Sign-out: ends every session of `tokenId` issued up to `now`, on every node.
    public func endSessions(of tokenId: Int64, now: Int64) async throws {
        try await blocking.run { try self.tokens.endSessions(of: tokenId, at: now) }
    }

    /// The CSRF token of the pages shown under session cookie `cookie`: a MAC of it under the
    /// same key, so it needs no storage, differs per sign-in and dies with the session. The
    /// cookie is `SameSite=Strict` already; the token is the second lock on the forms that
    /// change something, for browsers that do not keep SameSite.
    public func csrfToken(cookie: String) -> String {
        mac("csrf." + cookie, createdAt: 0)
    }

    /// Whether `presented` is the CSRF token of `cookie` (compared in constant time).
    public func csrfMatches(cookie: String, presented: String) -> Bool {
        ConstantTime.equal(Array(csrfToken(cookie: cookie).utf8), Array(presented.utf8))
    }

    private func mac(_ payload: String, createdAt: Int64) -> String {
        let code = HMAC<Crypto.SHA256>.authenticationCode(for: Data("\(payload).\(createdAt)".utf8), using: SymmetricKey(data: key))
        return HexText.lowercase(code)
    }
}
