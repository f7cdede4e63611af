import Foundation
import Hummingbird
import Storage
import APIModel
import Presentation
import ReportModel

/// The read API (scope read): what the CLI commands of the same names print with `--json`,
/// built by the same code (the Presentation module), with their filters as query parameters.
func addQueryRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    let read = router.group("/api/v1").add(middleware: RequireScope(.read, deps))

    // `stackline status --json`.
    read.get("/status") { _, _ in
        try JSONResponse.encode(queueCountsJSON(try await deps.blocking.run { try deps.queries.stateCounts() }))
    }

    // `stackline status ID --json`.
    read.get("/status/{id}") { _, context in
        let id = try reportId(context)
        let job = try await deps.blocking.run { try deps.queries.jobStatus(reportId: id) }
        guard let job else { throw APIError.notFound("no report with id \(id)") }
        return try JSONResponse.encode(JobStatusJSON(job, now: deps.clock.now()))
    }

    // `stackline groups --json [--kind] [--app] [--version] [--since] [--namespace] [--state] [--sort] [--limit]`.
    read.get("/groups") { request, _ in
        let q = QueryParameters(request)
        let filter = GroupFilter(
            kind: try q.value("kind", expected: "crash or lag") { ReportKind(rawValue: $0) },
            app: q.string("app"), version: q.string("version"),
            since: try q.value("since", expected: "a duration (30m, 24h, 7d, 2w) or a date (2026-11-01)") { SinceDate(argument: $0) }
                .map { $0.milliseconds(now: deps.clock.now()) },
            limit: try q.int("limit", in: 1...10_000) ?? 20, namespace: q.string("namespace"),
            state: try q.value("state", expected: "open, resolved or ignored") { GroupStateName(rawValue: $0) },
            sort: try q.value("sort", expected: "reports, users, sessions or lastSeen") { GroupSort(rawValue: $0) } ?? .reports)
        return try await deps.blocking.run { try JSONResponse.encode(try deps.queries.groups(filter).map(GroupJSON.init)) }
    }

    // `stackline group FINGERPRINT --json` (a unique prefix works too).
    read.get("/groups/{fingerprint}") { _, context in
        let fingerprint = try context.parameters.require("fingerprint")
        return try await deps.blocking.run {
            let detail: GroupDetail
            do {
                guard let found = try deps.queries.group(fingerprint: fingerprint) else {
                    throw APIError.notFound("no group with fingerprint \(fingerprint)")
                }
                detail = found
            } catch let error as GroupQueryError {
                throw APIError.badRequest(error.description)
            }
            let representative = try detail.summary.representativeReportId.flatMap { try deps.queries.result(reportId: $0) }
                .map { try ReportPrinter.decode($0) }
            let history = try deps.queries.groupHistory(fingerprint: detail.summary.fingerprint, limit: 20)
            return try JSONResponse.encode(GroupDetailJSON(detail, representative: representative, history: history))
        }
    }

    // `stackline report ID --format json|text|apple`.
    read.get("/reports/{id}") { request, context in
        let id = try reportId(context)
        let format = try QueryParameters(request).value("format", expected: "json, text or apple") { ReportOutputFormat(rawValue: $0) }
            ?? .json
        return try await deps.blocking.run {
            guard let result = try deps.queries.result(reportId: id) else {
                guard let job = try deps.queries.jobStatus(reportId: id) else { throw APIError.notFound("no report with id \(id)") }
                // The report exists but has no result yet (or failed): say which, as `report` does.
                throw APIError(.conflict, JobStateText.sentence(reportId: id, job))
            }
            let group = deps.queries.group(of: result)
            let report = try ReportPrinter.decode(result)
            // Joined now, not stored: a source may have answered since the report was processed.
            let sources = try deps.queries.sourceAnswers(buildIds: ReportPrinter.notFoundIds(report))
            switch format {
            case .json: return JSONResponse.object(try ReportPrinter.document(report, group: group, sources: sources))
            case .text, .apple: return JSONResponse.text(try ReportPrinter.render(report, format: format, group: group, sources: sources))
            }
        }
    }

    // `stackline symbols missing --json`.
    read.get("/symbols/missing") { _, _ in
        try await deps.blocking.run { try JSONResponse.encode(try deps.queries.missingDebugFiles()) }
    }
}

/// The `{id}` path parameter as a report id.
private func reportId(_ context: StacklineRequestContext) throws -> Int64 {
    let text = try context.parameters.require("id")
    guard let id = Int64(text), id > 0 else { throw APIError.badRequest("report id must be a positive integer, not \(text)") }
    return id
}
