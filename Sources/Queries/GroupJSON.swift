import Foundation
import Storage
import ReportModel

/// The `--json` shape of one group (`groups`, `group`, and the `group` of `report --json`).
public struct GroupJSON: Encodable, Sendable {
    public var fingerprint: String
    public var kind: String
    public var title: String
    public var count: Int
    public var firstSeen: Date
    public var lastSeen: Date
    public var versions: [String: Int]
    public var rulesVersion: Int
    public var app: String?

    public init(_ g: GroupSummary) {
        fingerprint = g.fingerprint
        kind = g.kind.rawValue
        title = g.title
        count = g.count
        firstSeen = g.firstSeen
        lastSeen = g.lastSeen
        versions = g.versions
        rulesVersion = g.rulesVersion
        app = g.app
    }
}


/// The `group FP --json` shape: the group, the frames that decided it, its latest reports.
public struct GroupDetailJSON: Encodable, Sendable {
    public var group: GroupJSON
    public var frames: [String]
    public var representativeReportId: Int64?
    public var latestReportIds: [Int64]
    public var representative: SymbolicatedReport?

    public init(_ detail: GroupDetail, representative: SymbolicatedReport?) {
        group = GroupJSON(detail.summary)
        frames = detail.summary.frames
        representativeReportId = detail.summary.representativeReportId
        latestReportIds = detail.latestReportIds
        self.representative = representative
    }
}
