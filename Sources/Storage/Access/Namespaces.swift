import Foundation
import GRDB

/// A namespace as stored: its key and configuration are opaque here (SDKProtocol checks them).
public struct StoredNamespace: Sendable, Equatable {
    public var name: String
    /// The AES key SDK payloads of this namespace are encrypted with.
    public var aesKey: Data?
    /// The remote configuration JSON; nil serves the defaults.
    public var configuration: String?
    /// Reports uploaded into the namespace.
    public var reportCount: Int
    public var createdAt: Date
    public var updatedAt: Date
}

/// An SDK record that became one or more stored reports.
public struct SDKRecordRow: Sendable {
    public var namespace: String
    public var sdkReportId: String
    public var monitorType: String
    public var createdTime: Int64
    public var meta: String

    public init(namespace: String, sdkReportId: String, monitorType: String, createdTime: Int64, meta: String) {
        self.namespace = namespace
        self.sdkReportId = sdkReportId
        self.monitorType = monitorType
        self.createdTime = createdTime
        self.meta = meta
    }
}

extension ServiceDatabase {
    /// One namespace, or nil when none of that name was created.
    public func namespace(_ name: String) throws -> StoredNamespace? {
        try pool.read { db in
            try Row.fetchOne(db, sql: Self.namespaceQuery + " WHERE n.name = ?", arguments: [name]).map(Self.storedNamespace)
        }
    }

    /// Every namespace, by name.
    public func namespaces() throws -> [StoredNamespace] {
        try pool.read { db in
            try Row.fetchAll(db, sql: Self.namespaceQuery + " ORDER BY n.name").map(Self.storedNamespace)
        }
    }

    private static let namespaceQuery = """
        SELECT n.*, (SELECT COUNT(*) FROM reports r WHERE r.namespace = n.name) AS report_count FROM namespaces n
        """

    private static func storedNamespace(_ row: Row) -> StoredNamespace {
        StoredNamespace(
            name: row["name"], aesKey: row["aes_key"], configuration: row["configuration"],
            reportCount: row["report_count"], createdAt: Date(milliseconds: row["created_at"]),
            updatedAt: Date(milliseconds: row["updated_at"]))
    }

    /// Sets (or replaces) a namespace's AES key, creating the namespace if needed.
    public func setNamespaceKey(_ name: String, key: Data) throws {
        try upsertNamespace(name, column: "aes_key", value: key)
    }

    /// Sets (or replaces) a namespace's remote configuration, creating the namespace if needed.
    public func setNamespaceConfiguration(_ name: String, json: String) throws {
        try upsertNamespace(name, column: "configuration", value: json)
    }

    private func upsertNamespace(_ name: String, column: String, value: some DatabaseValueConvertible) throws {
        try immediate { db in
            let now = clock()
            try db.execute(
                sql: """
                    INSERT INTO namespaces (name, \(column), created_at, updated_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (name) DO UPDATE SET \(column) = excluded.\(column), updated_at = excluded.updated_at
                    """,
                arguments: [name, value, now, now])
        }
    }

    /// The reports an SDK record with this `report_id` already became in this namespace (empty
    /// when it was never stored, or its reports were pruned).
    public func sdkRecordReports(namespace: String, sdkReportId: String) throws -> [Int64] {
        try pool.read { db in
            try Int64.fetchAll(
                db, sql: "SELECT report_id FROM sdk_records WHERE namespace = ? AND sdk_report_id = ? ORDER BY report_id",
                arguments: [namespace, sdkReportId])
        }
    }

    /// Remembers which reports an SDK record became, and who they came from (`session`, kept in
    /// `report_sessions` for release health). A row already there is kept (two uploads of one
    /// record racing end with one row per report).
    public func recordSDKReports(_ record: SDKRecordRow, reportIds: [Int64], session: SessionIdentity? = nil) throws {
        try immediate { db in
            let now = clock()
            for id in reportIds {
                if let session { try SessionCounters.insertReportSession(db, reportId: id, session, createdTime: record.createdTime, receivedAt: now) }
                try db.execute(
                    sql: """
                        INSERT OR IGNORE INTO sdk_records
                            (namespace, sdk_report_id, report_id, monitor_type, created_time, meta, received_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [record.namespace, record.sdkReportId, id, record.monitorType, record.createdTime,
                                record.meta, now])
            }
        }
    }
}
