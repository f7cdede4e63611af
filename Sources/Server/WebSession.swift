import Crypto
import Foundation
import Hashing
import JobQueue
import ReportModel

/// The web view's sign-in cookie.
///
/// The cookie never holds the token. A browser keeps cookies on disk and sends them on every
/// request, and a user expects that signing in to a web page leaves something that ends (on its
/// own, at sign-out, when the token is revoked), not a copy of a long-lived API credential that
/// works forever from wherever it leaks to. So the value is `v1.<token id>.<expiry ms>.<MAC>`:
/// an HMAC-SHA256, under a key made at random when the server starts, of the token's id, its
/// creation time and the expiry. It cannot be forged or extended without the key, stops working
/// at its expiry, when the server restarts (a new key: people sign in again, which we judged an
/// acceptable price for keeping no session table and no migration), and when the token is
/// revoked (each request re-reads the token's row). It is sent `HttpOnly` (no script reads it),
/// `SameSite=Strict` (no other site's page makes the browser send it: the pages need no CSRF
/// token), `Path=/`, and `Secure` over https (`--tls-cert`, or a TLS proxy). The request log never contains it.
public struct WebSession: Sendable {
    /// The cookie's name.
    public static let cookieName = "stackline_session"
    /// How long a sign-in lasts.
    public static let lifetimeMs: Int64 = 12 * 3_600_000

    /// The MAC key's bytes (`SymmetricKey` is not `Sendable`; the routes share this value).
    private let key: [UInt8]

    /// A session signer with a fresh random key (one per server process).
    public init() { key = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) } }

    /// The cookie value for `token`, valid until `now + lifetimeMs`.
    public func value(for token: TokenRecord, now: Int64) -> String {
        let payload = "v1.\(token.id).\(now + Self.lifetimeMs)"
        return payload + "." + mac(payload, createdAt: token.createdAt)
    }

    /// The token id a cookie value names, if its MAC is ours and it has not expired. The
    /// caller still checks the token row (revoked, scope) and `createdAt` through `verify`.
    public func verify(_ value: String, now: Int64, createdAt: (Int64) throws -> Int64?) rethrows -> Int64? {
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard value.utf8.count <= 200, parts.count == 4, parts[0] == "v1", let id = Int64(parts[1]), let expiry = Int64(parts[2]),
            expiry > now
        else { return nil }
        guard let created = try createdAt(id) else { return nil }
        let expected = mac("v1.\(id).\(expiry)", createdAt: created)
        // The MAC's bytes must not leak through timing.
        return ConstantTime.equal(Array(expected.utf8), Array(parts[3].utf8)) ? id : nil
    }

    private func mac(_ payload: String, createdAt: Int64) -> String {
        let code = HMAC<Crypto.SHA256>.authenticationCode(for: Data("\(payload).\(createdAt)".utf8), using: SymmetricKey(data: key))
        return HexText.lowercase(code)
    }
}
