import Foundation
import GRDB
import ReportModel

/// A result the alert rules have not seen yet: one completed report and the group it joined.
public struct AlertCandidate: Sendable, Equatable {
    /// `results.rowid`: results are numbered in the order they were stored, which is the cursor's order.
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

/// Read-only questions the alert rules ask, answered inside one read transaction, so every
/// answer of one evaluation comes from the same snapshot.
public struct AlertFacts {
    let db: Database

    /// Results stored after `cursor` whose report joined a group, in storage order.
    public func candidates(after cursor: Int64, limit: Int) throws -> [AlertCandidate] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT s.rowid AS position, s.report_id, s.fingerprint, g.kind, r.app, COALESCE(r.version, '') AS version,
                       r.received_at
                FROM results s JOIN reports r ON r.id = s.report_id JOIN groups g ON g.fingerprint = s.fingerprint
                WHERE s.rowid > ? ORDER BY s.rowid LIMIT ?
                """,
            arguments: [cursor, limit]
        ).map { row in
            AlertCandidate(
                position: row["position"], reportId: row["report_id"], fingerprint: row["fingerprint"],
                groupKind: try row.stored("kind"), app: row["app"], version: row["version"], receivedAt: row["received_at"])
        }
    }

    /// The regressions (`group_history` entries) these reports caused, by report id.
    public func regressions(causedBy reportIds: [Int64]) throws -> [Int64: GroupHistoryEntry] {
        var found: [Int64: GroupHistoryEntry] = [:]
        for start in stride(from: 0, to: reportIds.count, by: 500) {
            let chunk = Array(reportIds[start..<min(start + 500, reportIds.count)])
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM group_history WHERE action = 'regressed'
                    AND report_id IN (\(databaseQuestionMarks(count: chunk.count)))
                    """,
                arguments: StatementArguments(chunk))
            {
                let entry = GroupHistory.entry(row)
                if let id = entry.reportId { found[id] = entry }
            }
        }
        return found
    }

    /// Distinct users (`ReportIdentitySQL.userKey`) of group `fingerprint`'s reports of
    /// `version` received in `(after, upTo]`.
    public func groupUsers(_ fingerprint: String, version: String, after: Int64, upTo: Int64) throws -> Int {
        try StateTransitions.users(GRDBExecutor(db), fingerprint: fingerprint, version: version, after: after, upTo: upTo)
    }

    /// Release health of one version of `app` (docs/releases.md), as `stackline releases`
    /// counts it; nil when the version has neither launches nor reports.
    public func release(app: String, version: String) throws -> ReleaseCounts? {
        try ServiceDatabase.releaseHealth(db, app: app, version: version, namespace: nil).first { $0.version == version }
    }

    /// The position of the last stored result (0 when there is none).
    public func lastPosition() throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(rowid), 0) FROM results") ?? 0
    }

    /// Whether a result at or before `position` is in group `fingerprint` (an index seek on
    /// `results_fingerprint`, whose entries end with the rowid).
    public func groupHasResult(_ fingerprint: String, atOrBefore position: Int64) throws -> Bool {
        try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM results WHERE fingerprint = ? AND rowid <= ?)",
            arguments: [fingerprint, position]) ?? false
    }

    public func group(_ fingerprint: String) throws -> AlertGroupFacts? {
        guard let row = try Row.fetchOne(
            db, sql: "SELECT fingerprint, kind, title, app, count, first_seen, last_seen FROM groups WHERE fingerprint = ?",
            arguments: [fingerprint])
        else { return nil }
        return AlertGroupFacts(
            fingerprint: row["fingerprint"], kind: try row.stored("kind"), title: row["title"], app: row["app"],
            count: row["count"], firstSeen: row["first_seen"], lastSeen: row["last_seen"])
    }

    /// Reports per app version of one group ("" is a report without a version).
    public func versionCounts(of fingerprint: String) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try Row.fetchAll(
            db, sql: "SELECT version, count FROM group_versions WHERE fingerprint = ?", arguments: [fingerprint])
        {
            counts[row["version"]] = row["count"]
        }
        return counts
    }

    /// Results of `fingerprint` in app version `version` stored after `cursor`: equal to the
    /// group's count in that version exactly when the group had no report in it before.
    public func resultCount(of fingerprint: String, version: String, after cursor: Int64) throws -> Int {
        try Int.fetchOne(
            db,
            sql: """
                SELECT COUNT(*) FROM results s JOIN reports r ON r.id = s.report_id
                WHERE s.fingerprint = ? AND s.rowid > ? AND COALESCE(r.version, '') = ?
                """,
            arguments: [fingerprint, cursor, version]) ?? 0
    }

    /// Reports per app version over every group of `kind` of one app (`nil`: reports without an app).
    public func appVersionCounts(app: String?, kind: ReportKind) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT v.version, SUM(v.count) AS n FROM group_versions v JOIN groups g ON g.fingerprint = v.fingerprint
                WHERE g.app IS ? AND g.kind = ? GROUP BY v.version
                """,
            arguments: [app, kind.rawValue])
        {
            counts[row["version"]] = row["n"]
        }
        return counts
    }

    /// Reports of one group received in `[from, to)`, counted per bucket of `bucketMs`
    /// (key: the bucket's start). Buckets without a report are absent.
    public func bucketCounts(of fingerprint: String, from: Int64, to: Int64, bucketMs: Int64) throws -> [Int64: Int] {
        var counts: [Int64: Int] = [:]
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT (r.received_at / ?) * ? AS bucket, COUNT(*) AS n
                FROM results s JOIN reports r ON r.id = s.report_id
                WHERE s.fingerprint = ? AND r.received_at >= ? AND r.received_at < ? GROUP BY bucket
                """,
            arguments: [bucketMs, bucketMs, fingerprint, from, to])
        {
            counts[row["bucket"]] = row["n"]
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

extension ServiceDatabase {
    static let alertCursorName = "results"

    /// The last result position the rules were evaluated on; nil before the first evaluation.
    public func alertCursor() throws -> Int64? {
        try pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT value FROM alert_cursors WHERE name = ?", arguments: [Self.alertCursorName])
        }
    }

    /// Runs `body` in one read transaction (one snapshot of the database).
    public func alertSnapshot<T>(_ body: (AlertFacts) throws -> T) throws -> T {
        try pool.read { db in try body(AlertFacts(db: db)) }
    }

    /// Records `events` (an event whose rule, group and scope exist already is skipped, with
    /// its deliveries) and moves the cursor from `old` to `new`, in one transaction: after a
    /// crash either both happened or neither. Returns the events that were new, with their ids.
    @discardableResult
    public func recordAlertEvents(
        _ events: [NewAlertEvent], cursorFrom old: Int64?, to new: Int64
    ) throws -> [(id: Int64, event: NewAlertEvent)] {
        try immediate { db in
            let now = clock()
            if let old {
                try db.execute(
                    sql: "UPDATE alert_cursors SET value = ? WHERE name = ? AND value = ?",
                    arguments: [new, Self.alertCursorName, old])
                guard db.changesCount == 1 else { throw AlertCursorMoved() }
            } else {
                try db.execute(
                    sql: "INSERT OR IGNORE INTO alert_cursors (name, value) VALUES (?, ?)", arguments: [Self.alertCursorName, new])
                guard db.changesCount == 1 else { throw AlertCursorMoved() }
            }
            var inserted: [(id: Int64, event: NewAlertEvent)] = []
            for event in events {
                try db.execute(
                    sql: """
                        INSERT OR IGNORE INTO alert_events (rule, kind, fingerprint, scope, severity, payload, created_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [event.rule, event.kind, event.fingerprint, event.scope, event.severity, event.payload, now])
                guard db.changesCount == 1 else { continue }
                let id = db.lastInsertedRowID
                inserted.append((id, event))
                for target in event.targets {
                    try db.execute(
                        sql: """
                            INSERT OR IGNORE INTO alert_deliveries (event_id, target, state, attempts, next_attempt_at, updated_at)
                            VALUES (?, ?, 'pending', 0, ?, ?)
                            """,
                        arguments: [id, target, now, now])
                }
            }
            return inserted
        }
    }

    /// Takes up to `limit` pending deliveries that are due, counting the attempt and pushing
    /// their next attempt `leaseMs` ahead, so no other loop takes them while they are sent (a
    /// process killed mid-send tries again after the lease: delivery is at least once).
    public func takeDueAlertDeliveries(limit: Int, leaseMs: Int64) throws -> [AlertDeliveryJob] {
        try immediate { db in
            let now = clock()
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT d.id, d.event_id, e.rule, d.target, d.attempts, e.payload
                    FROM alert_deliveries d JOIN alert_events e ON e.id = d.event_id
                    WHERE d.state = 'pending' AND d.next_attempt_at <= ? ORDER BY d.next_attempt_at, d.id LIMIT ?
                    """,
                arguments: [now, limit])
            return try rows.map { row in
                let id: Int64 = row["id"]
                let attempts: Int = row["attempts"]
                try db.execute(
                    sql: "UPDATE alert_deliveries SET attempts = attempts + 1, next_attempt_at = ?, updated_at = ? WHERE id = ?",
                    arguments: [now + leaseMs, now, id])
                return AlertDeliveryJob(
                    id: id, eventId: row["event_id"], rule: row["rule"], target: row["target"],
                    attempts: attempts + 1, payload: row["payload"])
            }
        }
    }

    /// The delivery went out. The last failed attempt's error, if any, stays for the record.
    public func alertDelivered(_ id: Int64) throws {
        try immediate { db in
            try db.execute(
                sql: "UPDATE alert_deliveries SET state = 'delivered', updated_at = ? WHERE id = ?",
                arguments: [clock(), id])
        }
    }

    /// The delivery failed: try again at `retryAt`, or never (nil: it is marked failed).
    public func alertDeliveryFailed(_ id: Int64, error: String, retryAt: Int64?) throws {
        try immediate { db in
            try db.execute(
                sql: """
                    UPDATE alert_deliveries SET state = ?, last_error = ?, next_attempt_at = COALESCE(?, next_attempt_at),
                                                updated_at = ?
                    WHERE id = ?
                    """,
                arguments: [retryAt == nil ? "failed" : "pending", error, retryAt, clock(), id])
        }
    }

    /// The latest `limit` events, newest first, with their deliveries.
    public func recentAlertEvents(limit: Int) throws -> [AlertEventRecord] {
        try pool.read { db in
            let events = try Row.fetchAll(
                db,
                sql: "SELECT id, rule, kind, fingerprint, scope, severity, created_at FROM alert_events ORDER BY id DESC LIMIT ?",
                arguments: [limit])
            return try events.map { row in
                let id: Int64 = row["id"]
                let deliveries = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT target, state, attempts, next_attempt_at, last_error FROM alert_deliveries
                        WHERE event_id = ? ORDER BY target
                        """,
                    arguments: [id]
                ).map { d in
                    AlertDeliveryState(
                        target: d["target"], state: d["state"], attempts: d["attempts"], nextAttemptAt: d["next_attempt_at"],
                        lastError: d["last_error"])
                }
                return AlertEventRecord(
                    id: id, rule: row["rule"], kind: row["kind"], fingerprint: row["fingerprint"], scope: row["scope"],
                    severity: row["severity"], createdAt: row["created_at"], deliveries: deliveries)
            }
        }
    }
}
