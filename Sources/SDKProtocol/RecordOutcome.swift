import Foundation

/// What the server did with one record of a batch.
public enum RecordStatus: String, Sendable, Codable, Equatable {
    /// Stored as a new report (or reports) and queued for symbolication.
    case accepted
    /// Already stored: the same `report_id` in the same namespace, or the same report bytes.
    case duplicate
    /// Acknowledged and counted, not stored: a monitor type the server does not symbolicate.
    case dropped
    /// Not stored, with the reason; sending it again unchanged will not help.
    case refused
}

/// The answer for one record, in the order the batch sent them.
public struct RecordOutcome: Sendable, Encodable, Equatable {
    /// Position in the batch's `records` array.
    public var index: Int
    /// The record's `report_id`, when it could be read.
    public var reportId: String?
    public var status: RecordStatus
    /// Stored report ids (accepted and duplicate): one per report the payload held.
    public var ids: [Int64]?
    /// The format of each new report, parallel to `ids` (accepted records only).
    public var formats: [String]?
    /// Why a record was refused or dropped, or a note on a duplicate.
    public var reason: String?
    /// The record's namespace and monitor class, when it could be read (for metrics; not sent).
    public var namespace: String?
    public var monitorClass: MonitorClass?

    public init(
        index: Int, reportId: String?, status: RecordStatus, ids: [Int64]? = nil, formats: [String]? = nil,
        reason: String? = nil, namespace: String? = nil, monitorClass: MonitorClass? = nil
    ) {
        self.index = index
        self.reportId = reportId
        self.status = status
        self.ids = ids
        self.formats = formats
        self.reason = reason
        self.namespace = namespace
        self.monitorClass = monitorClass
    }

    enum CodingKeys: String, CodingKey {
        case index
        case reportId = "report_id"
        case status, ids, formats, reason
    }
}

/// The answer to a batch: counts per status, then one outcome per record in input order.
public struct BatchResponse: Sendable, Encodable, Equatable {
    public var accepted: Int
    public var duplicate: Int
    public var dropped: Int
    public var refused: Int
    public var records: [RecordOutcome]

    public init(_ outcomes: [RecordOutcome]) {
        records = outcomes.sorted { $0.index < $1.index }
        func count(_ status: RecordStatus) -> Int { outcomes.count { $0.status == status } }
        accepted = count(.accepted)
        duplicate = count(.duplicate)
        dropped = count(.dropped)
        refused = count(.refused)
    }

}
