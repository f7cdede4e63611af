import Foundation
import ReportModel
import SQLInterface

/// A result the alert rules have not seen yet: one completed report and the group it joined.
public struct AlertCandidate: Sendable, Equatable {
    /// The result's position (`ResultPositions`): the order results were stored in, which is the cursor's order.
    public var position: Int64
    public var reportId: Int64
    public var fingerprint: String
    public var groupKind: ReportKind
    public var app: String?
    /// The report's app version; "" when it has none (as `group_versions` stores it).
    public var version: String
    /// When the server received the report (ms since the epoch): what spikes are counted by.
    public var receivedAt: Int64
}

/// A group as an alert describes it.
public struct AlertGroupFacts: Sendable, Equatable {
    public var fingerprint: String
    public var kind: ReportKind
    public var title: String
    public var app: String?
    public var count: Int
    public var firstSeen: Int64
    public var lastSeen: Int64
}

/// Where a result stands in the order results were stored, which the alert cursor follows:
/// SQLite's `rowid`, PostgreSQL's `results.position` (an identity). A result keeps its position
/// when reprocessing replaces it.
///
/// The cursor may only pass positions whose transactions are over, or a result stored late
/// under a lower position would never be seen. SQLite has one writer at a time, so every
/// position below the highest committed one is committed. On PostgreSQL several completions
/// commit in any order, so each takes a shared advisory lock before it stores a result, and
/// the horizon is read under the exclusive one: once it is held, every position handed out so
/// far belongs to a transaction that has ended.
public enum ResultPositions {
    static let horizonLock: Int64 = 0x5354_4B4C_5253_4C54

    static func column(_ dialect: SQLDialect, _ table: String = "s") -> String {
        dialect == .sqlite ? "\(table).rowid" : "\(table).position"
    }

    /// Called by a completion before it stores results (PostgreSQL only).
    static func holdHorizon(_ db: SQLExecutor) throws {
        guard db.dialect == .postgres else { return }
        try AdvisoryLock.take(db, horizonLock, shared: true)
    }

    /// The highest position at or below which every result is committed (0 when none is).
    static func horizon(_ db: SQLExecutor) throws -> Int64 {
        if db.dialect == .postgres {
            try AdvisoryLock.take(db, horizonLock)
        }
        return try db.int64("SELECT COALESCE(MAX(\(column(db.dialect))), 0) FROM results s") ?? 0
    }
}

/// Read-only questions the alert rules ask, answered inside one read transaction, so every
/// answer of one evaluation comes from the same snapshot.
public struct AlertFacts {
    let db: SQLExecutor

    private var position: String { ResultPositions.column(db.dialect) }

    /// Results stored after `cursor`, up to `horizon` (`alertHorizon`), whose report joined a
    /// group, in storage order.
    public func candidates(after cursor: Int64, through horizon: Int64, limit: Int) throws -> [AlertCandidate] {
        try db.rows(
            """
            SELECT \(position) AS position, s.report_id, s.fingerprint, g.kind, r.app, COALESCE(r.version, '') AS version,
                   r.received_at
            FROM results s JOIN reports r ON r.id = s.report_id JOIN groups g ON g.fingerprint = s.fingerprint
            WHERE \(position) > ? AND \(position) <= ? ORDER BY \(position) LIMIT ?
            """,
            cursor, horizon, limit
        ).map { row in
            AlertCandidate(
                position: try row.int64(0), reportId: try row.int64(1), fingerprint: try row.string(2),
                groupKind: try row.stored(3, "kind"), app: try row.optionalString(4), version: try row.string(5),
                receivedAt: try row.int64(6))
        }
    }

    /// The regressions (`group_history` entries) these reports caused, by report id.
    public func regressions(causedBy reportIds: [Int64]) throws -> [Int64: GroupHistoryEntry] {
        var found: [Int64: GroupHistoryEntry] = [:]
        for chunk in reportIds.sqlChunks {
            for row in try db.rows(
                """
                SELECT \(GroupHistory.columns) FROM group_history WHERE action = 'regressed'
                AND report_id IN (\(sqlPlaceholders(chunk.count)))
                """,
                chunk.map(\.sqlValue))
            {
                let entry = try GroupHistory.entry(row)
                if let id = entry.reportId { found[id] = entry }
            }
        }
        return found
    }

    /// Distinct users (`ReportIdentitySQL.userKey`) of group `fingerprint`'s reports of
    /// `version` received in `(after, upTo]`.
    public func groupUsers(_ fingerprint: String, version: String, after: Int64, upTo: Int64) throws -> Int {
        try StateTransitions.users(db, fingerprint: fingerprint, version: version, after: after, upTo: upTo)
    }

    /// Release health of one version of `app` (docs/releases.md), as `stackline releases`
    /// counts it; nil when the version has neither launches nor reports.
    public func release(app: String, version: String) throws -> ReleaseCounts? {
        try ReleaseHealth.releases(db, app: app, version: version, namespace: nil).first { $0.version == version }
    }

    /// Whether a result at or before `position` is in group `fingerprint`.
    public func groupHasResult(_ fingerprint: String, atOrBefore position: Int64) throws -> Bool {
        try db.bool("SELECT EXISTS (SELECT 1 FROM results s WHERE s.fingerprint = ? AND \(self.position) <= ?)", fingerprint, position)
    }

    public func group(_ fingerprint: String) throws -> AlertGroupFacts? {
        guard let row = try db.row(
            "SELECT fingerprint, kind, title, app, count, first_seen, last_seen FROM groups WHERE fingerprint = ?", fingerprint)
        else { return nil }
        return AlertGroupFacts(
            fingerprint: try row.string(0), kind: try row.stored(1, "kind"), title: try row.string(2), app: try row.optionalString(3),
            count: try row.int(4), firstSeen: try row.int64(5), lastSeen: try row.int64(6))
    }

    /// Reports per app version of one group ("" is a report without a version).
    public func versionCounts(of fingerprint: String) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try db.rows("SELECT version, count FROM group_versions WHERE fingerprint = ?", fingerprint) {
            counts[try row.string(0)] = try row.int(1)
        }
        return counts
    }

    /// Results of `fingerprint` in app version `version` stored after `cursor`: equal to the
    /// group's count in that version exactly when the group had no report in it before.
    public func resultCount(of fingerprint: String, version: String, after cursor: Int64) throws -> Int {
        try db.int(
            """
            SELECT COUNT(*) FROM results s JOIN reports r ON r.id = s.report_id
            WHERE s.fingerprint = ? AND \(position) > ? AND COALESCE(r.version, '') = ?
            """,
            fingerprint, cursor, version) ?? 0
    }

    /// Reports per app version over every group of `kind` of one app (`nil`: reports without an app).
    public func appVersionCounts(app: String?, kind: ReportKind) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try db.rows(
            """
            SELECT v.version, SUM(v.count) AS n FROM group_versions v JOIN groups g ON g.fingerprint = v.fingerprint
            WHERE g.app IS NOT DISTINCT FROM ? AND g.kind = ? GROUP BY v.version
            """,
            app, kind.rawValue)
        {
            counts[try row.string(0)] = try row.int(1)
        }
        return counts
    }

    /// Reports of one group received in `[from, to)`, counted per bucket of `bucketMs`
    /// (key: the bucket's start). Buckets without a report are absent.
    public func bucketCounts(of fingerprint: String, from: Int64, to: Int64, bucketMs: Int64) throws -> [Int64: Int] {
        var counts: [Int64: Int] = [:]
        for row in try db.rows(
            """
            SELECT (r.received_at / CAST(? AS BIGINT)) * CAST(? AS BIGINT) AS bucket, COUNT(*) AS n
            FROM results s JOIN reports r ON r.id = s.report_id
            WHERE s.fingerprint = ? AND r.received_at >= ? AND r.received_at < ? GROUP BY 1
            """,
            bucketMs, bucketMs, fingerprint, from, to)
        {
            counts[try row.int64(0)] = try row.int(1)
        }
        return counts
    }
}

/// An event a rule raised, with the targets it goes to.
public struct NewAlertEvent: Sendable, Equatable {
    public var rule: String
    public var kind: String
    public var fingerprint: String
    /// What makes the event unique besides rule and group (docs/alerts.md).
    public var scope: String
    public var severity: String
    /// The event as JSON (without its id, which the database assigns).
    public var payload: String
    public var targets: [String]

    public init(
        rule: String, kind: String, fingerprint: String, scope: String, severity: String, payload: String, targets: [String]
    ) {
        self.rule = rule
        self.kind = kind
        self.fingerprint = fingerprint
        self.scope = scope
        self.severity = severity
        self.payload = payload
        self.targets = targets
    }
}

/// One delivery to attempt now: its event and where it goes.
public struct AlertDeliveryJob: Sendable, Equatable {
    public var id: Int64
    public var eventId: Int64
    public var rule: String
    public var target: String
    /// Attempts so far, this one included.
    public var attempts: Int
    public var payload: String
}

/// A delivery as `stackline alerts list` shows it.
public struct AlertDeliveryState: Sendable, Codable, Equatable {
    public var target: String
    public var state: String
    public var attempts: Int
    public var nextAttemptAt: Int64
    public var lastError: String?
}

/// An event as `stackline alerts list` shows it.
public struct AlertEventRecord: Sendable, Codable, Equatable {
    public var id: Int64
    public var rule: String
    public var kind: String
    public var fingerprint: String
    public var scope: String
    public var severity: String
    public var createdAt: Int64
    public var deliveries: [AlertDeliveryState]
}

/// The alert cursor moved under this process: another `stackline serve` evaluates rules on the same database.
public struct AlertCursorMoved: Error, CustomStringConvertible {
    public var description: String { "the alert cursor was moved by another process on the same database" }
}

extension SQLStore {
    /// The highest result position the alert cursor may pass now (`ResultPositions`).
    public func alertHorizon() throws -> Int64 {
        try write { db in try ResultPositions.horizon(db) }
    }

    /// The last result position the rules were evaluated on; nil before the first evaluation.
    public func alertCursor() throws -> Int64? {
        try read { db in try db.int64("SELECT value FROM alert_cursors WHERE name = ?", AlertStore.cursorName) }
    }

    /// Runs `body` in one read transaction (one snapshot of the database).
    public func alertSnapshot<T>(_ body: (AlertFacts) throws -> T) throws -> T {
        try read { db in try body(AlertFacts(db: db)) }
    }

    /// Records `events` (an event whose rule, group and scope exist already is skipped, with
    /// its deliveries) and moves the cursor from `old` to `new`, in one transaction: after a
    /// crash either both happened or neither. Returns the events that were new, with their ids.
    @discardableResult
    public func recordAlertEvents(
        _ events: [NewAlertEvent], cursorFrom old: Int64?, to new: Int64
    ) throws -> [(id: Int64, event: NewAlertEvent)] {
        try write { db in
            let now = now()
            if let old {
                let moved = try db.execute(
                    "UPDATE alert_cursors SET value = ? WHERE name = ? AND value = ?", new, AlertStore.cursorName, old)
                guard moved == 1 else { throw AlertCursorMoved() }
            } else {
                let created = try db.execute(
                    "INSERT INTO alert_cursors (name, value) VALUES (?, ?) ON CONFLICT DO NOTHING", AlertStore.cursorName, new)
                guard created == 1 else { throw AlertCursorMoved() }
            }
            var inserted: [(id: Int64, event: NewAlertEvent)] = []
            for event in events {
                guard let id = try db.int64(
                    """
                    INSERT INTO alert_events (rule, kind, fingerprint, scope, severity, payload, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id
                    """,
                    event.rule, event.kind, event.fingerprint, event.scope, event.severity, event.payload, now)
                else { continue }
                inserted.append((id, event))
                for target in event.targets {
                    try db.execute(
                        """
                        INSERT INTO alert_deliveries (event_id, target, state, attempts, next_attempt_at, updated_at)
                        VALUES (?, ?, 'pending', 0, ?, ?) ON CONFLICT DO NOTHING
                        """,
                        id, target, now, now)
                }
            }
            return inserted
        }
    }

    /// Takes up to `limit` pending deliveries that are due, counting the attempt and pushing
    /// their next attempt `leaseMs` ahead, so no other loop takes them while they are sent (a
    /// process killed mid-send tries again after the lease: delivery is at least once).
    public func takeDueAlertDeliveries(limit: Int, leaseMs: Int64) throws -> [AlertDeliveryJob] {
        try write { db in
            let now = now()
            // Another node's pass skips the rows this one took (PostgreSQL), instead of waiting
            // to take them again.
            let lock = db.dialect == .postgres ? " FOR UPDATE OF d SKIP LOCKED" : ""
            let rows = try db.rows(
                """
                SELECT d.id, d.event_id, e.rule, d.target, d.attempts, e.payload
                FROM alert_deliveries d JOIN alert_events e ON e.id = d.event_id
                WHERE d.state = 'pending' AND d.next_attempt_at <= ? ORDER BY d.next_attempt_at, d.id LIMIT ?\(lock)
                """,
                now, limit)
            return try rows.map { row in
                let id = try row.int64(0)
                let attempts = try row.int(4)
                try db.execute(
                    "UPDATE alert_deliveries SET attempts = attempts + 1, next_attempt_at = ?, updated_at = ? WHERE id = ?",
                    now + leaseMs, now, id)
                return AlertDeliveryJob(
                    id: id, eventId: try row.int64(1), rule: try row.string(2), target: try row.string(3),
                    attempts: attempts + 1, payload: try row.string(5))
            }
        }
    }

    /// The delivery went out. The last failed attempt's error, if any, stays for the record.
    public func alertDelivered(_ id: Int64) throws {
        try write { db in
            try db.execute("UPDATE alert_deliveries SET state = 'delivered', updated_at = ? WHERE id = ?", now(), id)
        }
    }

    /// The delivery failed: try again at `retryAt`, or never (nil: it is marked failed).
    public func alertDeliveryFailed(_ id: Int64, error: String, retryAt: Int64?) throws {
        try write { db in
            try db.execute(
                """
                UPDATE alert_deliveries SET state = ?, last_error = ?, next_attempt_at = COALESCE(CAST(? AS BIGINT), next_attempt_at),
                                            updated_at = ?
                WHERE id = ?
                """,
                retryAt == nil ? "failed" : "pending", error, retryAt, now(), id)
        }
    }

    /// The latest `limit` events, newest first, with their deliveries.
    public func recentAlertEvents(limit: Int) throws -> [AlertEventRecord] {
        try read { db in
            let events = try db.rows(
                "SELECT id, rule, kind, fingerprint, scope, severity, created_at FROM alert_events ORDER BY id DESC LIMIT ?", limit)
            return try events.map { row in
                let id = try row.int64(0)
                let deliveries = try db.rows(
                    """
                    SELECT target, state, attempts, next_attempt_at, last_error FROM alert_deliveries
                    WHERE event_id = ? ORDER BY target
                    """,
                    id
                ).map { d in
                    AlertDeliveryState(
                        target: try d.string(0), state: try d.string(1), attempts: try d.int(2), nextAttemptAt: try d.int64(3),
                        lastError: try d.optionalString(4))
                }
                return AlertEventRecord(
                    id: id, rule: try row.string(1), kind: try row.string(2), fingerprint: try row.string(3), scope: try row.string(4),
                    severity: try row.string(5), createdAt: try row.int64(6), deliveries: deliveries)
            }
        }
    }
}

enum AlertStore {
    static let cursorName = "results"
}
