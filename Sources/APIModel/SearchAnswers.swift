import Foundation
import ReportModel

/// `stackline reports --json` and `GET /api/v1/reports?where=`: a page of the reports a search
/// matched, newest first. `nextCursor` is passed back as `cursor` (or `--cursor`) for the next
/// page, and is left out on the last one (docs/json.md: absent values are left out).
public struct ReportSearchJSON: Codable, Sendable, Equatable {
    public var reports: [ReportSummaryJSON]
    public var nextCursor: String?

    public init(reports: [ReportSummaryJSON], nextCursor: String?) {
        self.reports = reports
        self.nextCursor = nextCursor
    }

}

/// One report a search found. `app` and `version` are what its SDK meta named, else its own;
/// `osVersion` and `deviceModel` come from the SDK meta (absent for reports sent without one);
/// `fingerprint` and `title` are its group's, absent until it is processed and grouped.
public struct ReportSummaryJSON: Codable, Sendable, Equatable {
    public var id: Int64
    public var app: String?
    public var version: String?
    public var kind: ReportKind
    public var received: Date
    public var namespace: String?
    public var fingerprint: String?
    public var title: String?
    public var osVersion: String?
    public var deviceModel: String?

    public init(
        id: Int64, app: String?, version: String?, kind: ReportKind, received: Date, namespace: String?, fingerprint: String?,
        title: String?, osVersion: String?, deviceModel: String?
    ) {
        self.id = id
        self.app = app
        self.version = version
        self.kind = kind
        self.received = received
        self.namespace = namespace
        self.fingerprint = fingerprint
        self.title = title
        self.osVersion = osVersion
        self.deviceModel = deviceModel
    }

}

/// `stackline facets KEY --json`, `GET /api/v1/facets` and `GET /api/v1/groups/{fp}/facets`:
/// the matched reports counted by one attribute's values, the `top` most frequent first (then
/// by value), an entry without `value` counting the reports without the attribute, and the rest
/// in `other`.
/// The counts of `values` and `other` add up to `total`.
public struct FacetsJSON: Codable, Sendable, Equatable {
    public var key: String
    public var total: Int
    public var values: [FacetValueJSON]
    public var other: Int

    public init(key: String, total: Int, values: [FacetValueJSON], other: Int) {
        self.key = key
        self.total = total
        self.values = values
        self.other = other
    }
}

public struct FacetValueJSON: Codable, Sendable, Equatable {
    /// Absent: the reports without the attribute.
    public var value: String?
    public var count: Int

    public init(value: String?, count: Int) {
        self.value = value
        self.count = count
    }
}
