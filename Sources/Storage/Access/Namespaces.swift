import Foundation
import SQLInterface

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

extension SQLStore {
    /// One namespace, or nil when none of that name was created.
    public func namespace(_ name: String) throws -> StoredNamespace? {
        try read { db in try db.row(NamespaceRows.query + " WHERE n.name = ?", name).map(NamespaceRows.stored) }
    }

    /// Every namespace, by name.
    public func namespaces() throws -> [StoredNamespace] {
        try read { db in try db.rows(NamespaceRows.query + " ORDER BY n.name").map(NamespaceRows.stored) }
    }

    /// Sets (or replaces) a namespace's AES key, creating the namespace if needed.
    public func setNamespaceKey(_ name: String, key: Data) throws {
        try upsertNamespace(name, column: "aes_key", value: key)
    }

    /// Sets (or replaces) a namespace's remote configuration, creating the namespace if needed.
    public func setNamespaceConfiguration(_ name: String, json: String) throws {
        try upsertNamespace(name, column: "configuration", value: json)
    }

    private func upsertNamespace(_ name: String, column: String, value: some SQLBindable) throws {
        try write { db in
            let now = now()
            try db.execute(
                """
                INSERT INTO namespaces (name, \(column), created_at, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET \(column) = excluded.\(column), updated_at = excluded.updated_at
                """,
                name, value, now, now)
        }
    }

    /// The reports an SDK record with this `report_id` already became in this namespace (empty
    /// when it was never stored, or its reports were pruned).
    public func sdkRecordReports(namespace: String, sdkReportId: String) throws -> [Int64] {
        try read { db in
            try db.rows(
                "SELECT report_id FROM sdk_records WHERE namespace = ? AND sdk_report_id = ? ORDER BY report_id", namespace, sdkReportId
            ).map { try $0.int64(0) }
        }
    }

    /// Remembers which reports an SDK record became, and who they came from (`session`, kept in
    /// `report_sessions` for release health). A row already there is kept (two uploads of one
    /// record racing end with one row per report).
    public func recordSDKReports(_ record: SDKRecordRow, reportIds: [Int64], session: SessionIdentity? = nil) throws {
        try write { db in
            let now = now()
            for id in reportIds {
                if let session { try SessionCounters.insertReportSession(db, reportId: id, session, createdTime: record.createdTime, receivedAt: now) }
                try db.execute(
                    """
                    INSERT INTO sdk_records (namespace, sdk_report_id, report_id, monitor_type, created_time, meta, received_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                    record.namespace, record.sdkReportId, id, record.monitorType, record.createdTime, record.meta, now)
            }
        }
    }
}

/// How a namespace row is read.
enum NamespaceRows {
    static let query = """
        SELECT n.name, n.aes_key, n.configuration, n.created_at, n.updated_at,
               (SELECT COUNT(*) FROM reports r WHERE r.namespace = n.name) AS report_count
        FROM namespaces n
        """

    static func stored(_ row: SQLRow) throws -> StoredNamespace {
        StoredNamespace(
            name: try row.string(0), aesKey: try row.optionalData(1), configuration: try row.optionalString(2),
            reportCount: try row.int(5), createdAt: Date(milliseconds: try row.int64(3)),
            updatedAt: Date(milliseconds: try row.int64(4)))
    }
}
