import Foundation
import ReportModel
import SQLInterface

/// Work that one node at a time does when several `serve` nodes share a database: the alert
/// rules and their deliveries, and retention. Each is a row lease (`singletons`): the node that
/// holds it renews it at every pass; when that node dies its lease runs out and the next node
/// to ask takes it. Two nodes doing the work at once would still be correct (the alert cursor
/// moves by compare-and-set, events are unique, deliveries and prunes lock their rows), only
/// wasteful; the lease keeps it to one.
public enum Singleton: String, Sendable {
    case alerts
    case retention
}

/// Who holds a singleton: this process, named so that `singletons` says which node it is
/// (host and pid) and a restarted process on the same pid never passes for the old one.
public struct NodeIdentity: Sendable, Equatable, CustomStringConvertible {
    public let name: String

    public init(name: String) { self.name = name }

    /// This process: host, pid and a random part.
    public static let current: NodeIdentity = {
        let host = ProcessInfo.processInfo.hostName.prefix(64)
        let random = HexText.lowercase((0..<4).map { _ in UInt8.random(in: 0...255) })
        return NodeIdentity(name: "\(host):\(getpid()):\(random)")
    }()

    public var description: String { name }
}

extension SQLStore {
    /// Takes or renews `singleton` for `node` until `ttlMs` from now; true when `node` holds it.
    /// Another node's lease is taken only once it has run out, on the database's clock
    /// (`SQLStore.now`: on PostgreSQL, the server's, whatever the nodes' own clocks say).
    public func hold(_ singleton: Singleton, for node: NodeIdentity, ttlMs: Int64) throws -> Bool {
        try write { db in
            let now = now()
            return try db.execute(
                """
                INSERT INTO singletons (name, holder, expires_at) VALUES (?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
                WHERE singletons.holder = excluded.holder OR singletons.expires_at < ?
                """,
                singleton.rawValue, node.name, now + ttlMs, now) == 1
        }
    }

    /// Gives `singleton` up if `node` holds it (a clean stop), so another node takes it at its
    /// next pass instead of after the lease runs out.
    public func release(_ singleton: Singleton, for node: NodeIdentity) throws {
        try write { db in try db.execute("DELETE FROM singletons WHERE name = ? AND holder = ?", singleton.rawValue, node.name) }
    }

    /// Who holds `singleton` now, if anyone does.
    public func holder(of singleton: Singleton) throws -> String? {
        let now = now()
        return try read { db in
            try db.string("SELECT holder FROM singletons WHERE name = ? AND expires_at >= ?", singleton.rawValue, now)
        }
    }
}
