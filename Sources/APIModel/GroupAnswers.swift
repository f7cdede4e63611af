import Foundation
import ReportModel

/// The `--json` shape of one group (`groups`, `group`, and the `group` of `report --json`;
/// `GET /api/v1/groups`).
public struct GroupJSON: Codable, Sendable, Equatable {
    public var fingerprint: String
    public var kind: String
    public var title: String
    public var count: Int
    public var firstSeen: Date
    public var lastSeen: Date
    public var versions: [String: Int]
    public var rulesVersion: Int
    public var app: String?

    public init(
        fingerprint: String, kind: String, title: String, count: Int, firstSeen: Date, lastSeen: Date, versions: [String: Int],
        rulesVersion: Int, app: String?
    ) {
        self.fingerprint = fingerprint
        self.kind = kind
        self.title = title
        self.count = count
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.versions = versions
        self.rulesVersion = rulesVersion
        self.app = app
    }
}

/// The `group FP --json` shape (`GET /api/v1/groups/{fingerprint}`): the group, the frames that
/// decided it, its latest reports.
public struct GroupDetailJSON: Codable, Sendable {
    public var group: GroupJSON
    public var frames: [String]
    public var representativeReportId: Int64?
    public var latestReportIds: [Int64]
    public var representative: SymbolicatedReport?

    public init(
        group: GroupJSON, frames: [String], representativeReportId: Int64?, latestReportIds: [Int64],
        representative: SymbolicatedReport?
    ) {
        self.group = group
        self.frames = frames
        self.representativeReportId = representativeReportId
        self.latestReportIds = latestReportIds
        self.representative = representative
    }
}
