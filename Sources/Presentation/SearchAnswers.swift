import APIModel
import Foundation
import Storage

extension ReportSearchJSON {
    public init(_ page: ReportSearchPage) {
        self.init(reports: page.rows.map(ReportSummaryJSON.init), nextCursor: page.nextCursor.map(String.init))
    }
}

extension ReportSummaryJSON {
    public init(_ row: ReportSearchRow) {
        self.init(
            id: row.id, app: row.app, version: row.version, kind: row.kind, received: Date(milliseconds: row.receivedAt),
            namespace: row.namespace, fingerprint: row.fingerprint, title: row.title, osVersion: row.osVersion,
            deviceModel: row.deviceModel)
    }
}

extension FacetsJSON {
    public init(_ counts: FacetCounts) {
        self.init(
            key: counts.key, total: counts.total, values: counts.values.map { FacetValueJSON(value: $0.value, count: $0.count) },
            other: counts.other)
    }
}
