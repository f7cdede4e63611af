import Foundation
import ReportModel
import ReportQuery
import Storage

/// `--where` and `?where=` as the server takes them: the text parsed by `ReportQuery`, and every
/// query it accepts run as a search and as facets against a real database, so a term the parser
/// admits but the SQL compiler (`QuerySQL`) mishandles is a finding, not a 500 in production.
enum SearchQueryTarget {
    /// A scratch database with a few reports, opened once per process (libFuzzer runs millions
    /// of inputs). Nil when it cannot be made: the harness then says so on every input.
    static let database: ServiceDatabase? = {
        let path = Scratch.shared.path + "/search.sqlite"
        try? FileManager.default.removeItem(atPath: path)
        guard let db = try? ServiceDatabase(path: path) else { return nil }
        let versions = ["1.0", "1.10", "2.0"]
        let reports: [StorableReport] = (0..<6).map { (n: Int) -> StorableReport in
            let kind: ReportKind = n % 3 == 0 ? .lag : .crash
            let namespace: String? = n % 2 == 0 ? "ns" : nil
            let device = DeviceInfo(model: "iPhone\(n),1", osVersion: "17.\(n)", id: "D\(n % 4)")
            let report = NewReport(
                raw: Data("report \(n)".utf8), format: "apple-ips", kind: kind, app: "App", version: versions[n % 3],
                namespace: namespace, device: device)
            return StorableReport(report)
        }
        guard (try? db.submit(reports)) != nil else { return nil }
        return db
    }()

    static func run(_ data: Data) throws(FuzzFailure) -> String {
        // The server hands the route a String: invalid UTF-8 became U+FFFD on the way.
        let text = String(decoding: data.prefix(ReportQuery.Limits.maxExpressionBytes * 2), as: UTF8.self)
        guard let db = database else { throw FuzzFailure("harness: the scratch database could not be made") }
        // The text as a facet key (`?key=`), whose meta key becomes a JSON path argument.
        if let key = try? FacetKey(text) {
            try facets(db, key: key, query: .all)
            return "counted by \(key)"
        }
        let query: ReportQuery
        do {
            query = try ReportQuery.parse(text)
        } catch {
            // Columns count characters; bytes bound them from above.
            guard (1...text.utf8.count + 1).contains(error.column) else {
                throw FuzzFailure("an error at column \(error.column) of a \(text.utf8.count)-byte expression: \(error)")
            }
            return "refused: \(error)"
        }
        guard query.terms.count <= ReportQuery.Limits.maxTerms else {
            throw FuzzFailure("\(query.terms.count) terms passed the limit of \(ReportQuery.Limits.maxTerms)")
        }
        let page: ReportSearchPage
        do {
            page = try db.searchReports(query, limit: 10)
        } catch {
            throw FuzzFailure("a parsed query failed in the database: \(error)")
        }
        for key in ["os_version", "meta.channel"].compactMap({ try? FacetKey($0) }) {
            try facets(db, key: key, query: query)
        }
        return "searched: \(page.rows.count) of 6 reports"
    }

    /// Facets must run, and their counts add up to no more than the reports there are.
    static func facets(_ db: ServiceDatabase, key: FacetKey, query: ReportQuery) throws(FuzzFailure) {
        let found: FacetCounts?
        do {
            found = try db.facets(key: key, query: query, top: 3)
        } catch {
            throw FuzzFailure("facets by \(key) failed in the database: \(error)")
        }
        guard let counts = found else { return }
        guard let listed = (counts.values.map(\.count) + [counts.other]).checkedSum(), listed == counts.total, counts.total <= 6 else {
            throw FuzzFailure("facet \(key): \(counts.values.map(\.count)) listed and \(counts.other) other do not add up to the total \(counts.total)")
        }
    }
}
