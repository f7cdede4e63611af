import Foundation
import Hashing
import JSONFormat
import ReportModel
import SQLInterface

/// Who an SDK record came from, as its meta says: the session, user and device (its id, model
/// and OS version), and the app and version its SDK ran. Values are bounded where the meta is
/// parsed (`SDKMeta`).
public struct SessionIdentity: Sendable, Equatable {
    public var app: String?
    public var version: String?
    public var sessionId: String?
    public var userId: String?
    public var deviceId: String?
    public var osVersion: String?
    public var deviceModel: String?

    /// Longest value kept; `SDKMeta.maxIdentityBytes` refuses longer ones at the door, this only
    /// guards the migration of metas stored before that check.
    static let maxFieldBytes = ReportLimits.maxIdentityBytes

    public init(
        app: String?, version: String?, sessionId: String?, userId: String?, deviceId: String?, osVersion: String? = nil,
        deviceModel: String? = nil
    ) {
        self.app = app
        self.version = version
        self.sessionId = sessionId
        self.userId = userId
        self.deviceId = deviceId
        self.osVersion = osVersion
        self.deviceModel = deviceModel
    }

    /// From a stored meta object (`sdk_records.meta`): string fields only, empty or over-long
    /// ones read as absent; nil when the text is not a JSON object.
    init?(metaJSON: Data) {
        guard case .object(let fields)? = try? JSONDecoder().decode(JSONValue.self, from: metaJSON) else { return nil }
        func field(_ key: String) -> String? {
            guard case .string(let text)? = fields[key], !text.isEmpty, text.utf8.count <= Self.maxFieldBytes else { return nil }
            return text
        }
        self.init(
            app: field("app_name"), version: field("app_version"), sessionId: field("session_id"), userId: field("user_id"),
            deviceId: field("device_id"), osVersion: field("os_version"), deviceModel: field("device_model"))
    }

    /// What a distinct user is counted by: the user id when the app set one, else the device
    /// id (the prefixes keep a user id equal to some device id apart); nil when neither.
    public var userKey: String? {
        if let userId { return "u:" + userId }
        if let deviceId { return Self.devicePrefix + deviceId }
        return nil
    }

    /// The user key prefix of a device id (also a report's own device key: `ReportIdentitySQL`).
    static let devicePrefix = "d:"

}

/// One launch (`appBoot` record) to count.
public struct SessionLaunch: Sendable, Equatable {
    public var namespace: String
    /// The SDK's `report_id`: a launch sent again is counted once.
    public var sdkReportId: String
    /// The record's created_time, ms; its UTC day is the counter's (`SessionCounters.countedTime`).
    public var createdTime: Int64
    public var app: String
    public var version: String
    /// '' when the launch did not say.
    public var osVersion: String
    public var deviceModel: String
    /// `HyperLogLog.hash` of the identity's `userKey`, hashed before the write lock is taken.
    public var userHash: UInt64?

    public init(
        namespace: String, sdkReportId: String, createdTime: Int64, app: String, version: String, osVersion: String,
        deviceModel: String, userKey: String?
    ) {
        self.namespace = namespace
        self.sdkReportId = sdkReportId
        self.createdTime = createdTime
        self.app = app
        self.version = version
        self.osVersion = osVersion
        self.deviceModel = deviceModel
        userHash = userKey.map(HyperLogLog.hash)
    }
}

/// The session counters' rules, shared by the writes and the queries.
public enum SessionCounters {
    public static let dayMs: Int64 = 86_400_000
    /// How long a launch's `report_id` is remembered to answer a resent batch `duplicate`: an SDK
    /// sends again within minutes of a failed upload; two days leave room for a server outage.
    public static let duplicateWindow: Int64 = 2 * dayMs

    /// When a launch or an SDK report is counted as having happened: its `created_time`, unless
    /// the device's clock is plainly wrong (more than a day ahead of the server's, or older than
    /// the SDK keeps records, `expirationDay` ≤ 30), then when it arrived. One launch from a phone
    /// set to 2040 must not become the app's "last day" that adoption is measured on.
    public static func countedTime(created: Int64, received: Int64) -> Int64 {
        let (earliest, early) = received.subtractingReportingOverflow(31 * dayMs)
        let (latest, late) = received.addingReportingOverflow(dayMs)
        return (early || created >= earliest) && (late || created <= latest) ? created : received
    }

    /// Records who a report came from (`report_sessions`); a row already there is kept.
    /// `createdTime` is the record's, `receivedAt` the server's clock (`countedTime`).
    static func insertReportSession(
        _ db: SQLExecutor, reportId: Int64, _ identity: SessionIdentity, createdTime: Int64, receivedAt: Int64
    ) throws {
        // Who the report came from decides the users and sessions it counts for in its group:
        // a report already filed leaves them as it was counted and joins them as it now is.
        let group = try db.string("SELECT fingerprint FROM results WHERE report_id = ?", reportId)
        if let group { try GroupCounters.remove(db, fingerprint: group, reportIds: [reportId]) }
        try db.execute(
            """
            INSERT INTO report_sessions
                (report_id, app, version, session_id, user_key, user_id, device_id, created_time, os_version, device_model)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
            """,
            reportId, identity.app, identity.version, identity.sessionId, identity.userKey, identity.userId, identity.deviceId,
            countedTime(created: createdTime, received: receivedAt), identity.osVersion, identity.deviceModel)
        if let group { try GroupCounters.add(db, fingerprint: group, reportIds: [reportId]) }
    }

    /// One counter row's key.
    struct Key: Hashable, Comparable {
        var namespace, app, version: String
        var day: Int64
        var osVersion, deviceModel: String

        static func < (a: Key, b: Key) -> Bool {
            (a.namespace, a.app, a.version, a.day, a.osVersion, a.deviceModel)
                < (b.namespace, b.app, b.version, b.day, b.osVersion, b.deviceModel)
        }
    }

    /// What a batch adds to one counter row.
    struct Addition {
        var sessions = 0
        var users = HyperLogLog()
        var firstSeen = Int64.max
        var lastSeen = Int64.min
    }
}

extension SQLStore {
    /// Counts launches into their day's counter rows, in one transaction. Answers, per launch,
    /// true when it was counted and false when its `report_id` was counted before (within
    /// `SessionCounters.duplicateWindow`, or earlier in `launches`).
    public func recordLaunches(_ launches: [SessionLaunch]) throws -> [Bool] {
        guard !launches.isEmpty else { return [] }
        return try write { db in
            let now = now()
            try db.execute("DELETE FROM session_record_ids WHERE received_at < ?", now - SessionCounters.duplicateWindow)
            var counted: [Bool] = []
            var additions: [SessionCounters.Key: SessionCounters.Addition] = [:]
            for launch in launches {
                let remembered = try db.execute(
                    "INSERT INTO session_record_ids (namespace, sdk_report_id, received_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    launch.namespace, launch.sdkReportId, now)
                guard remembered > 0 else {
                    counted.append(false)
                    continue
                }
                counted.append(true)
                let at = SessionCounters.countedTime(created: launch.createdTime, received: now)
                let key = SessionCounters.Key(
                    namespace: launch.namespace, app: launch.app, version: launch.version, day: at / SessionCounters.dayMs,
                    osVersion: launch.osVersion, deviceModel: launch.deviceModel)
                additions[key, default: .init()].sessions += 1
                additions[key]!.firstSeen = min(additions[key]!.firstSeen, at)
                additions[key]!.lastSeen = max(additions[key]!.lastSeen, at)
                if let hash = launch.userHash { additions[key]!.users.insert(hash: hash) }
            }
            // In key order, so two nodes counting into the same rows lock them in the same order.
            let keyCondition = "namespace = ? AND app = ? AND version = ? AND day = ? AND os_version = ? AND device_model = ?"
            for (key, addition) in additions.sorted(by: { $0.key < $1.key }) {
                let keyArguments: [SQLValue] = [
                    key.namespace.sqlValue, key.app.sqlValue, key.version.sqlValue, key.day.sqlValue, key.osVersion.sqlValue,
                    key.deviceModel.sqlValue,
                ]
                // The sketch is merged here, not in SQL: the row is locked until commit so another
                // node's merge waits and reads this one's.
                if let row = try db.row(
                    "SELECT users, first_seen, last_seen FROM session_counters WHERE \(keyCondition)\(db.dialect.forUpdate)",
                    keyArguments)
                {
                    var users = try HyperLogLog(encoded: try row.data(0))
                    users.merge(addition.users)
                    try db.execute(
                        "UPDATE session_counters SET sessions = sessions + ?, users = ?, first_seen = ?, last_seen = ? WHERE \(keyCondition)",
                        [
                            addition.sessions.sqlValue, users.encoded.sqlValue, min(try row.int64(1), addition.firstSeen).sqlValue,
                            max(try row.int64(2), addition.lastSeen).sqlValue,
                        ] + keyArguments)
                } else {
                    try db.execute(
                        """
                        INSERT INTO session_counters
                            (namespace, app, version, day, os_version, device_model, sessions, users, first_seen, last_seen)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                        keyArguments + [
                            addition.sessions.sqlValue, addition.users.encoded.sqlValue, addition.firstSeen.sqlValue,
                            addition.lastSeen.sqlValue,
                        ])
                }
            }
            return counted
        }
    }
}
