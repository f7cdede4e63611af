import ArgumentParser
import Foundation
import APIModel
import JSONFormat
import Presentation
import ReportQuery
import Storage

/// `stackline facets KEY`: how the reports a search (or a group) matches spread over one
/// attribute's values, most frequent first.
struct FacetsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "facets",
        abstract: "Count reports by OS version, device model, app, version, kind or an SDK meta key.",
        discussion: """
            KEY is one of \(FacetKey.names.joined(separator: ", ")). The top values are shown with their \
            counts, then the rest as (other); (none) counts the reports without the attribute. \
            --where takes the expression of `stackline reports` (docs/search.md).
            """)

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "What to count by: \(FacetKey.names.joined(separator: ", ")).")
    var key: String

    @Option(name: .customLong("where"), help: "Only the reports this expression matches.")
    var expression = ""

    @Option(help: "Only the reports of this group (its fingerprint or a unique prefix).")
    var group: String?

    @Option(help: "Show this many most frequent values (1 to 100).")
    var top = SearchLimits.defaultFacetTop

    @Flag(help: "Machine-readable output.")
    var json = false

    func validate() throws {
        guard SearchLimits.facetTops.contains(top) else { throw ValidationError("--top must be in 1...100") }
        if let group, !ReportQuery.isFingerprintPrefix(group) { throw ValidationError("--group must be 1 to 64 hex digits") }
    }

    func run() throws {
        let facetKey: FacetKey
        do { facetKey = try FacetKey(key) } catch { throw fail("stackline facets: \(error.description)", code: 2) }
        let query = try parseWhere(expression, command: "facets")
        let db = try database.open(for: "facets")
        let found: FacetCounts?
        do {
            found = try db.facets(key: facetKey, query: query, fingerprint: group, top: top)
        } catch let error as GroupQueryError {
            throw fail("stackline facets: \(error.description)")
        }
        guard let found else { throw fail("stackline facets: no group with fingerprint \(group ?? "")") }
        let counts = FacetsJSON(found)
        if json {
            print(try encodeJSON(counts))
            return
        }
        if counts.total == 0 {
            print("no reports")
            return
        }
        func share(_ n: Int) -> String { String(format: "%.1f%%", Double(n) * 100 / Double(counts.total)) }
        var table = Table(counts.key.uppercased(), "REPORTS", "SHARE")
        for v in counts.values { table.add(v.value ?? "(none)", String(v.count), share(v.count)) }
        if counts.other > 0 { table.add("(other)", String(counts.other), share(counts.other)) }
        print(table.render())
        print("\(counts.total) reports")
    }
}
