import Foundation
import Hummingbird
import APIModel
import Presentation
import ReportQuery
import Storage

/// Search and facets (scope read): `GET /api/v1/reports?where=`, `GET /api/v1/facets` and
/// `GET /api/v1/groups/{fingerprint}/facets`, what `stackline reports` and `stackline facets`
/// print with `--json` (docs/search.md).
func addSearchRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    let read = router.group("/api/v1").add(middleware: RequireScope(.read, deps))

    // `stackline reports --json [--where] [--limit] [--cursor]`.
    read.get("/reports") { request, _ in
        let q = QueryParameters(request)
        let query = try whereQuery(q)
        let limit = try q.int("limit", in: SearchLimits.pageSizes) ?? SearchLimits.defaultPageSize
        let cursor = try q.value("cursor", expected: "the nextCursor of an earlier page") { Int64($0).flatMap { $0 > 0 ? $0 : nil } }
        return try await deps.blocking.run {
            try JSONResponse.encode(ReportSearchJSON(try deps.queries.searchReports(query, limit: limit, after: cursor)))
        }
    }

    // `stackline facets KEY --json [--where] [--top]`.
    read.get("/facets") { request, _ in
        try await facets(request, fingerprint: nil, deps: deps)
    }

    // `stackline facets KEY --group FINGERPRINT --json [--where] [--top]` (a unique prefix works too).
    read.get("/groups/{fingerprint}/facets") { request, context in
        let fingerprint = try context.parameters.require("fingerprint")
        guard ReportQuery.isFingerprintPrefix(fingerprint) else {
            throw APIError.badRequest("fingerprint: expected 1 to \(ReportQuery.Limits.maxFingerprintLength) hex digits")
        }
        return try await facets(request, fingerprint: fingerprint, deps: deps)
    }
}

/// `?where=` parsed; absent or empty is every report. A refusal is a 400 with the parser's message.
private func whereQuery(_ q: QueryParameters) throws -> ReportQuery {
    do {
        return try ReportQuery.parse(q.string("where") ?? "")
    } catch {
        throw APIError.badRequest(error.description)
    }
}

private func facets(_ request: Request, fingerprint: String?, deps: ServerDependencies) async throws -> Response {
    let q = QueryParameters(request)
    guard let keyText = q.string("key") else { throw APIError.badRequest("query parameter key is required: \(FacetKey.names.joined(separator: ", "))") }
    let key: FacetKey
    do { key = try FacetKey(keyText) } catch { throw APIError.badRequest(error.description) }
    let query = try whereQuery(q)
    let top = try q.int("top", in: SearchLimits.facetTops) ?? SearchLimits.defaultFacetTop
    return try await deps.blocking.run {
        let counts: FacetCounts?
        do {
            counts = try deps.queries.facets(key: key, query: query, fingerprint: fingerprint, top: top)
        } catch let error as GroupQueryError {
            throw APIError.badRequest(error.description)
        }
        guard let counts else { throw APIError.notFound("no group with fingerprint \(fingerprint ?? "")") }
        return try JSONResponse.encode(FacetsJSON(counts))
    }
}
