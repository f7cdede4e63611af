import Foundation
import Hashing
import ReportModel
import SQLInterface

/// What a `stackline serve` API token may do. `admin` may do everything.
public enum TokenScope: String, CaseIterable, Codable, Sendable {
    case ingest, symbols, read, triage, worker, admin

    /// True when a token of this scope may call an endpoint that needs `needed`. A `triage`
    /// token changes groups' states and reads everything a `read` token reads: the people who
    /// resolve crashes need to see them.
    public func permits(_ needed: TokenScope) -> Bool {
        self == .admin || self == needed || (self == .triage && needed == .read)
    }
}

/// One stored token, without its secret (only the digest is kept, and never leaves Storage).
public struct TokenRecord: Sendable, Equatable {
    public var id: Int64
    public var name: String?
    public var scope: TokenScope
    /// An ingest token's namespace: reports it uploads are tagged with it.
    public var namespace: String?
    public var createdAt: Int64
    public var revokedAt: Int64?
    public var lastUsedAt: Int64?

    public var isRevoked: Bool { revokedAt != nil }
}

/// A token just created: the record, and the token text, shown to the operator once.
public struct CreatedToken: Sendable {
    public var record: TokenRecord
    public var token: String
}

/// Why a token operation was refused.
public enum TokenError: Error, Equatable, CustomStringConvertible {
    case notFound(Int64)
    case alreadyRevoked(Int64)
    case namespaceNeedsIngestScope(TokenScope)
    case badNamespace(String)

    public var description: String {
        switch self {
        case .notFound(let id): "no token with id \(id)"
        case .alreadyRevoked(let id): "token \(id) is already revoked"
        case .namespaceNeedsIngestScope(let scope): "--namespace applies to ingest tokens only, not \(scope.rawValue)"
        case .badNamespace(let ns): "namespace \"\(ns)\" is not 1–64 characters of letters, digits, '.', '_' or '-' starting with a letter or digit"
        }
    }
}

/// API tokens: created, listed, revoked and verified here, stored only as SHA-256 digests.
///
/// A token reads `sl_<id>_<64 hex digits of randomness>`. The id finds the row; the digest of
/// the whole presented token is then compared with the stored one in constant time, so the
/// time a wrong token takes says nothing about how much of it was right.
public struct TokenStore: Sendable {
    public let db: any SQLStore

    public init(db: any SQLStore) { self.db = db }

    static let prefix = "sl_"

    /// The columns `record` reads, in its order.
    private static let columns = "id, name, scope, namespace, created_at, revoked_at, last_used_at, token_hash"

    /// A namespace is a short identifier; it reaches logs, metrics labels and queries (`NamespaceName`).
    public static func isValidNamespace(_ ns: String) -> Bool {
        (try? NamespaceName(ns)) != nil
    }

    /// Creates a token; the returned text is the only copy of the secret.
    public func create(scope: TokenScope, namespace: String? = nil, name: String? = nil) throws -> CreatedToken {
        if let namespace {
            guard scope == .ingest else { throw TokenError.namespaceNeedsIngestScope(scope) }
            guard Self.isValidNamespace(namespace) else { throw TokenError.badNamespace(namespace) }
        }
        var rng = SystemRandomNumberGenerator()  // getrandom(2): a cryptographic source
        let secret = HexText.lowercase((0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) })
        let store = db
        return try store.write { db in
            let now = store.now()
            // The id is only known after the insert, and the digest covers it: insert a
            // unique placeholder, then set the real digest in the same transaction.
            let id = try db.insert(
                "INSERT INTO tokens (name, scope, namespace, token_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                name, scope.rawValue, namespace, "pending-" + UUID().uuidString, now)
            let token = "\(Self.prefix)\(id)_\(secret)"
            try db.execute("UPDATE tokens SET token_hash = ? WHERE id = ?", SHA256.hex(Data(token.utf8)), id)
            return CreatedToken(
                record: TokenRecord(id: id, name: name, scope: scope, namespace: namespace, createdAt: now), token: token)
        }
    }

    /// Every token, oldest first, revoked ones included.
    public func list() throws -> [TokenRecord] {
        try db.read { db in
            try db.rows("SELECT \(Self.columns) FROM tokens ORDER BY id").map(Self.record)
        }
    }

    /// Revokes a token: it stops working at once, its row stays for the record.
    @discardableResult
    public func revoke(id: Int64) throws -> TokenRecord {
        let store = db
        return try store.write { db in
            guard let row = try db.row("SELECT \(Self.columns) FROM tokens WHERE id = ?", id) else {
                throw TokenError.notFound(id)
            }
            var record = try Self.record(row)
            guard record.revokedAt == nil else { throw TokenError.alreadyRevoked(id) }
            record.revokedAt = store.now()
            try db.execute("UPDATE tokens SET revoked_at = ? WHERE id = ?", record.revokedAt, id)
            return record
        }
    }

    /// The live token the presented text is, or nil (malformed, unknown, wrong secret, revoked).
    public func verify(_ presented: String) throws -> TokenRecord? {
        try Self.verify(presented, rows: stored(id:))
    }

    /// `verify` with the token rows read by `rows` (the server reuses them for a moment): the
    /// token's record if `presented` is `sl_<id>_<secret>`, its row exists, the secret hashes to
    /// the stored hash (compared in constant time), and the token is not revoked.
    public static func verify(_ presented: String, rows: (Int64) throws -> StoredToken?) throws -> TokenRecord? {
        guard let id = id(ofPresented: presented), let stored = try rows(id) else { return nil }
        let digest = SHA256.hex(Data(presented.utf8))
        guard ConstantTime.equal(Array(digest.utf8), Array(stored.hash.utf8)) else { return nil }
        return stored.record.isRevoked ? nil : stored.record
    }

    /// A token row as `verify` needs it: what callers may cache between verifications.
    public struct StoredToken: Sendable {
        public let record: TokenRecord
        fileprivate let hash: String
    }

    /// The id a presented token claims (`sl_<id>_<secret>`), nil if it is no token of ours.
    private static func id(ofPresented presented: String) -> Int64? {
        guard presented.hasPrefix(prefix), presented.utf8.count <= 128 else { return nil }
        let rest = presented.dropFirst(prefix.count)
        guard let underscore = rest.firstIndex(of: "_") else { return nil }
        return Int64(rest[..<underscore])
    }

    public func stored(id: Int64) throws -> StoredToken? {
        guard let row = try db.read({ db in try db.row("SELECT \(Self.columns) FROM tokens WHERE id = ?", id) }) else { return nil }
        return StoredToken(record: try Self.record(row), hash: try row.string(7))
    }

    /// Records when a token was last used (callers throttle this: it is a write).
    public func touch(id: Int64, at time: Int64? = nil) throws {
        let store = db
        try store.write { db in
            try db.execute("UPDATE tokens SET last_used_at = ? WHERE id = ?", time ?? store.now(), id)
        }
    }

    fileprivate static func record(_ row: SQLRow) throws -> TokenRecord {
        TokenRecord(
            id: try row.int64(0), name: try row.optionalString(1), scope: try row.stored(2, "scope"),
            namespace: try row.optionalString(3), createdAt: try row.int64(4), revokedAt: try row.optionalInt64(5),
            lastUsedAt: try row.optionalInt64(6))
    }
}

// The web view's sessions (`WebSession` in Server): what every node sharing the database must agree on.
extension TokenStore {
    /// The key web session cookies are signed with: the one already stored, or `proposed`
    /// when there is none yet (the first node to start stores its own; the others read it).
    public func sessionKey(proposing proposed: [UInt8]) throws -> [UInt8] {
        let store = db
        return try store.write { db in
            try db.execute(
                "INSERT INTO web_session_keys (id, key, created_at) VALUES (1, ?, ?) ON CONFLICT DO NOTHING", Data(proposed), store.now())
            guard let key = try db.row("SELECT key FROM web_session_keys WHERE id = 1") else {
                throw StorageError.unknownStoredValue(column: "web_session_keys.key", value: "NULL")
            }
            return Array(try key.data(0))
        }
    }

    /// Ends every web session `tokenId` opened at or before `at` (sign-out), on every node.
    public func endSessions(of tokenId: Int64, at: Int64) throws {
        try db.write { db in
            try db.execute(
                """
                INSERT INTO web_sign_outs (token_id, ended_at) VALUES (?, ?)
                ON CONFLICT (token_id) DO UPDATE SET ended_at = \(db.dialect.greatest)(web_sign_outs.ended_at, excluded.ended_at)
                """,
                tokenId, at)
        }
    }

    /// The token's row and when its web sessions were last ended (nil: never), in one read.
    public func storedForSession(id: Int64) throws -> (token: StoredToken, sessionsEndedAt: Int64?)? {
        try db.read { db in
            guard let row = try db.row(
                """
                SELECT \(Self.columns), (SELECT o.ended_at FROM web_sign_outs o WHERE o.token_id = t.id) AS ended_at
                FROM tokens t WHERE t.id = ?
                """,
                id)
            else { return nil }
            return (StoredToken(record: try Self.record(row), hash: try row.string(7)), try row.optionalInt64("ended_at"))
        }
    }
}

extension SQLStore {
    /// The API tokens kept in this database.
    public var tokens: TokenStore { TokenStore(db: self) }
}
