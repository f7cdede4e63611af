import Foundation
import ReportModel
import ReportQuery
import SQLInterface

/// One report a search found (`stackline reports`, `GET /api/v1/reports`).
public struct ReportSearchRow: Sendable, Equatable {
    public var id: Int64
    /// As its SDK meta named them, else as the report said (`QuerySQL.column`).
    public var app: String?
    public var version: String?
    public var kind: ReportKind
    /// ms since the epoch.
    public var receivedAt: Int64
    public var namespace: String?
    /// Its group, once processed and grouped.
    public var fingerprint: String?
    public var title: String?
    public var osVersion: String?
    public var deviceModel: String?
}

/// A page of a search, newest report first; `nextCursor` continues it (nil on the last page).
public struct ReportSearchPage: Sendable, Equatable {
    public var rows: [ReportSearchRow]
    public var nextCursor: Int64?
}

/// How the reports a search matched spread over one attribute's values.
public struct FacetCounts: Sendable, Equatable {
    public var key: String
    /// Reports matched.
    public var total: Int
    /// The most frequent values, most reports first, then by value; a nil value counts the
    /// reports without the attribute.
    public var values: [FacetValue]
    /// Reports with a value not among `values`.
    public var other: Int
}

public struct FacetValue: Sendable, Equatable {
    public var value: String?
    public var count: Int

    public init(value: String?, count: Int) {
        self.value = value
        self.count = count
    }
}

/// The bounds a search and a facet are asked within (the CLI's and the API's alike).
public enum SearchLimits {
    public static let pageSizes = 1...1_000
    public static let defaultPageSize = 50
    public static let facetTops = 1...100
    public static let defaultFacetTop = 10
}

extension SQLStore {
    /// The reports `query` matches, newest (highest id) first, at most `limit`, after the
    /// report id `cursor` (a page's `nextCursor`). Pages by id, not offset, so reports arriving
    /// between two pages neither repeat nor shift a row.
    public func searchReports(_ query: ReportQuery, limit: Int, after cursor: Int64? = nil) throws -> ReportSearchPage {
        let limit = min(max(limit, SearchLimits.pageSizes.lowerBound), SearchLimits.pageSizes.upperBound)
        let now = now()
        return try read { db in
            var filter = try QuerySQL(query, now: now, db: db)
            if let cursor { filter.add("r.id < ?", [.integer(cursor)]) }
            let rows = try db.rows(
                """
                SELECT r.id, \(QuerySQL.column(.app)!) AS app, \(QuerySQL.column(.version)!) AS version, r.kind, r.received_at,
                       r.namespace, s.fingerprint, g.title, \(ReportIdentitySQL.osVersion) AS os_version,
                       \(ReportIdentitySQL.deviceModel) AS device_model
                \(QuerySQL.from) LEFT JOIN groups g ON g.fingerprint = s.fingerprint
                \(filter.whereClause) ORDER BY r.id DESC LIMIT ?
                """,
                filter.arguments + [.integer(Int64(limit + 1))])
            let found = try rows.prefix(limit).map { row in
                ReportSearchRow(
                    id: try row.int64(0), app: try row.optionalString(1), version: try row.optionalString(2),
                    kind: try row.stored(3, "kind"), receivedAt: try row.int64(4), namespace: try row.optionalString(5),
                    fingerprint: try row.optionalString(6), title: try row.optionalString(7), osVersion: try row.optionalString(8),
                    deviceModel: try row.optionalString(9))
            }
            return ReportSearchPage(rows: found, nextCursor: rows.count > limit ? found.last?.id : nil)
        }
    }

    /// The reports `query` matches (within the group `fingerprint` names, by fingerprint or
    /// unique prefix) counted by `key`'s values: the `top` most frequent and the rest as one
    /// count. Nil when `fingerprint` names no group; `GroupQueryError` when it names several.
    public func facets(key: FacetKey, query: ReportQuery = .all, fingerprint: String? = nil, top: Int = SearchLimits.defaultFacetTop)
        throws -> FacetCounts?
    {
        let top = min(max(top, SearchLimits.facetTops.lowerBound), SearchLimits.facetTops.upperBound)
        if query.terms.isEmpty, let fingerprint, GroupCounters.facets.contains(where: { $0.field == key.field }) {
            return try countedFacets(key: key, fingerprint: fingerprint, top: top)
        }
        let now = now()
        return try read { db -> FacetCounts? in
            var filter = try QuerySQL(query, now: now, db: db)
            if let fingerprint {
                guard let group = try GroupRows.fingerprint(db, prefix: fingerprint) else { return nil }
                filter.add("s.fingerprint = ?", [.text(group)])
            }
            let value: String
            var valueArguments: [SQLValue] = []
            if case .meta(let metaKey) = key.field {
                // One value per report, should two SDK records have named the same report: the first stored.
                value = """
                    (SELECT \(QuerySQL.metaValue(db.dialect)) FROM sdk_records m WHERE m.report_id = r.id
                     ORDER BY m.received_at, m.namespace, m.sdk_report_id LIMIT 1)
                    """
                valueArguments = [QuerySQL.metaKeyArgument(metaKey, db.dialect)]
            } else if let column = QuerySQL.column(key.field) {
                value = column
            } else {
                // `FacetKey` admits only the fields that have a column or are meta keys.
                return FacetCounts(key: key.description, total: 0, values: [], other: 0)
            }
            // One pass over the matches: the total is the sum over every value, taken before the limit.
            let rows = try db.rows(
                """
                SELECT value, n, SUM(n) OVER () AS total FROM (
                    SELECT value, COUNT(*) AS n FROM (SELECT \(value) AS value \(QuerySQL.from) \(filter.whereClause)) AS matched
                    GROUP BY value) AS counted
                ORDER BY n DESC, value IS NULL, value LIMIT ?
                """,
                valueArguments + filter.arguments + [.integer(Int64(top))])
            return try Self.facetCounts(key, rows)
        }
    }

    /// A whole group's facet its page shows, from the ledger's counts (`group_facets`): what
    /// counting its reports gives, in the same order, without reading them.
    private func countedFacets(key: FacetKey, fingerprint prefix: String, top: Int) throws -> FacetCounts? {
        try read { db in
            guard let group = try GroupRows.fingerprint(db, prefix: prefix) else { return nil }
            let rows = try db.rows(
                """
                SELECT CASE WHEN named != 0 THEN value END AS v, count AS n, SUM(count) OVER () AS total FROM group_facets
                WHERE fingerprint = ? AND facet = ? ORDER BY count DESC, named = 0, value LIMIT ?
                """,
                group, key.field.description, top)
            return try Self.facetCounts(key, rows)
        }
    }

    /// Rows of (value, count, total) as the facet they count.
    private static func facetCounts(_ key: FacetKey, _ rows: [SQLRow]) throws -> FacetCounts {
        let values = try rows.map { FacetValue(value: try $0.optionalString(0), count: try $0.int(1)) }
        let total = try rows.first?.int(2) ?? 0
        // The listed counts are disjoint parts of `total`; checked all the same, as every sum here is.
        let listed = values.map(\.count).checkedSum() ?? total
        return FacetCounts(key: key.description, total: total, values: values, other: max(0, total - listed))
    }
}
