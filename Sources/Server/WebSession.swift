import Crypto
import Foundation
import Hashing
import Storage
import ReportModel
import Synchronization

/// The web view's sign-in cookie.
///
/// The cookie never holds the token. A browser keeps cookies on disk and sends them on every
/// request, and a user expects that signing in to a web page leaves something that ends (on its
/// own, at sign-out, when the token is revoked), not a copy of a long-lived API credential that
/// works forever from wherever it leaks to. So the value is
/// `v2.<token id>.<serial>.<expiry ms>.<MAC>`: an HMAC-SHA256, under a key made at random when
/// the server starts, of the token's id, the sign-in's serial number, the expiry and the token's
/// creation time. It cannot be forged or extended without the key, stops working at its expiry,
/// when the server restarts (a new key: people sign in again, which we judged an acceptable
/// price for keeping no session table and no migration), when the token is revoked (each
/// request re-reads the token's row), and at sign-out. It is sent `HttpOnly` (no script reads
/// it), `SameSite=Strict` (no other site's page makes the browser send it: the pages need no
/// CSRF token), `Path=/`, and `Secure` over https (`--tls-cert`, or a TLS proxy). The request
/// log never contains it.
///
/// Sign-out ends the session on the server, not only in the browser that asked (a copy of the
/// cookie would otherwise work until its expiry): it records, for the token, the serial of the
/// last sign-in so far, and every cookie of that token with a serial up to it is refused from
/// then on — every session that token opened, in any browser. Kept in memory, beside the key:
/// the cookies it ends die with the key at a restart anyway, so storing it would buy nothing.
/// One entry per token that signed out, and only a valid cookie can add one, so it is bounded
/// by the tokens in the database. Chosen over a deny-list of single sessions because that list
/// grows with every sign-in/sign-out pair a token holder cares to make for 12 hours.
public final class WebSession: Sendable {
    /// The cookie's name.
    public static let cookieName = "stackline_session"
    /// How long a sign-in lasts.
    public static let lifetimeMs: Int64 = 12 * 3_600_000

    /// The MAC key's bytes (`SymmetricKey` is not `Sendable`).
    private let key: [UInt8]

    private struct State {
        /// The serial of the last cookie issued (the first is 1).
        var lastSerial: UInt64 = 0
        /// Per token id, the last serial signed out: that token's cookies up to it are refused.
        var endedThrough: [Int64: UInt64] = [:]
    }
    private let state = Mutex(State())
    /// Where the token's row is read.
    private let tokens: TokenStore
    /// The row is read on this pool, never on the request's thread.
    private let blocking: BlockingWork

    /// A session signer with a fresh random key (one per server process).
    public init(tokens: TokenStore, blocking: BlockingWork) {
        key = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        self.tokens = tokens
        self.blocking = blocking
    }

    /// A new cookie value for `token`, valid until `now + lifetimeMs`.
    public func value(for token: TokenRecord, now: Int64) -> String {
        let serial = state.withLock { state in
            state.lastSerial += 1
            return state.lastSerial
        }
        let payload = "v2.\(token.id).\(serial).\(now + Self.lifetimeMs)"
        return payload + "." + mac(payload, createdAt: token.createdAt)
    }

    /// The live `read` token a cookie value stands for: its MAC is ours, it has not expired nor
    /// been signed out, and the token's row (read on the pool, no cache, so a revocation ends
    /// the session at once) exists, is not revoked and permits `read`. Nil otherwise; a missing,
    /// malformed or expired cookie is refused before any read.
    public func token(of value: String?, now: Int64) async throws -> TokenRecord? {
        guard let value else { return nil }
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard value.utf8.count <= 200, parts.count == 5, parts[0] == "v2", let id = Int64(parts[1]), let serial = UInt64(parts[2]),
            let expiry = Int64(parts[3]), expiry > now
        else { return nil }
        guard let token = try await blocking.run({ try self.tokens.stored(id: id)?.record }) else { return nil }
        let expected = mac("v2.\(id).\(serial).\(expiry)", createdAt: token.createdAt)
        // The MAC's bytes must not leak through timing.
        guard ConstantTime.equal(Array(expected.utf8), Array(parts[4].utf8)) else { return nil }
        let signedOut = state.withLock { serial <= $0.endedThrough[id, default: 0] }
        guard !signedOut, !token.isRevoked, token.scope.permits(.read) else { return nil }
        return token
    }

    /// Sign-out: ends every session of `tokenId` issued so far.
    public func endSessions(of tokenId: Int64) {
        state.withLock { state in state.endedThrough[tokenId] = state.lastSerial }
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
