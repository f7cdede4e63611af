import Foundation
import JSONFormat
import Hummingbird
import Intake
import Storage
import ReportFormats
import WorkerProtocol

/// `POST /api/v1/reports` (scope ingest): one raw report, plain or gzip, through `ReportIntake`.
func addReportRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    let ingest = router.group("/api/v1").add(middleware: RequireScope(.ingest, deps))
    ingest.post("/reports") { request, context -> Response in
        let token: TokenRecord
        let outcomes: [ReportIntake.Outcome]
        do {
            // Inflate, parse (in a parse child), digest and stored form in one pool job.
            let prepared: ReportIntake.Prepared
            (token, prepared) = try await deps.ingestRequest(request, context: context) { token, body in
                try deps.writer.intake.prepare(body.bytes, compressed: body.gzip, defaults: .init(namespace: token.namespace))
            }
            outcomes = try await deps.writer.commit(prepared)
        } catch let error as ParseRefusal {
            ServerMetrics.reportRefused(reason: "malformed")
            throw APIError.badRequest(error.description)
        }
        // Every part refused (a capture none of whose crashes parses): nothing was stored.
        if !outcomes.contains(where: { if case .stored = $0 { true } else { false } }), case .refused(let error)? = outcomes.first {
            ServerMetrics.reportRefused(reason: "malformed")
            throw APIError.badRequest(error.description)
        }
        let answer = ReportAcceptedJSON(outcomes, namespace: token.namespace)
        if let single = answer.singleReportJSON() {
            return JSONResponse.bytes(single, status: .accepted, contentType: JSONResponse.jsonType)
        }
        return try JSONResponse.encode(answer, status: .accepted)
    }
}

/// The answer to `POST /api/v1/reports`: `{"id", "duplicate"}` for the (first) report stored,
/// and when the input held several reports (a capture of several crashes), every one in
/// `reports`, in input order, each stored or refused with the parser's message.
struct ReportAcceptedJSON: Encodable {
    struct Part: Encodable {
        var id: Int64?
        var duplicate: Bool?
        var format: String?
        var error: String?
    }
    var id: Int64?
    var duplicate: Bool?
    var reports: [Part]?

    init(_ outcomes: [ReportIntake.Outcome], namespace: String?) {
        let parts = outcomes.map { outcome -> Part in
            switch outcome {
            case .stored(let stored, let format):
                ServerMetrics.reportIngested(format: format, namespace: namespace, duplicate: stored.duplicate)
                return Part(id: stored.reportId, duplicate: stored.duplicate, format: format)
            case .refused(let error):
                ServerMetrics.reportRefused(reason: "malformed")
                return Part(error: error.description)
            }
        }
        let first = parts.first { $0.id != nil }
        id = first?.id
        duplicate = first?.duplicate
        reports = parts.count > 1 ? parts : nil
    }

    /// The answer for one stored report, byte for byte what `JSONStyle.document` writes for it
    /// (pretty-printed, sorted keys), without JSONEncoder: it is the answer to nearly every
    /// upload, and the encoder's generic containers showed in its profile (scripts/bench-serve.sh).
    func singleReportJSON() -> Data? {
        guard reports == nil, let id, let duplicate else { return nil }
        return Data("{\n  \"duplicate\" : \(duplicate),\n  \"id\" : \(id)\n}".utf8)
    }
}
