import APIModel
import Foundation
import ReportModel
import Storage

extension GroupJSON {
    public init(_ g: GroupSummary) {
        self.init(
            fingerprint: g.fingerprint, kind: g.kind.rawValue, title: g.title, count: g.count, firstSeen: g.firstSeen,
            lastSeen: g.lastSeen, versions: g.versions, rulesVersion: g.rulesVersion, app: g.app)
    }
}

extension GroupDetailJSON {
    public init(_ detail: GroupDetail, representative: SymbolicatedReport?) {
        self.init(
            group: GroupJSON(detail.summary), frames: detail.summary.frames,
            representativeReportId: detail.summary.representativeReportId, latestReportIds: detail.latestReportIds,
            representative: representative)
    }
}
