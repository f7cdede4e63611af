import Foundation
import Hummingbird
import Master
import Presentation
import ReportFormats
import ReportModel
import WorkerProtocol

/// `POST /api/v1/symbolicate` (scope read): a raw report in, the symbolicated report out, without
/// queuing or storing anything. The work runs in a `stackline-worker` process of its own
/// (`OneShotWorker`), never in the server, under `--symbolicate-timeout`.
func addSymbolicateRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    let read = router.group("/api/v1").add(middleware: RequireScope(.read, deps))
    let slots = ConcurrencySlots(deps.limits.symbolicateConcurrency)

    read.post("/symbolicate") { request, _ -> Response in
        let format = try QueryParameters(request).value("format", expected: "json, text or apple") { ReportOutputFormat(rawValue: $0) }
            ?? .json
        // Detection and splitting are intake's, in a parse child like every ingested report's;
        // symbolication, where debug files are opened, is the worker's.
        let (data, reply) = try await BodyReader.readReport(
            request, limit: deps.limits.maxBodyBytes, inflatedLimit: deps.limits.maxReportBytes, blocking: deps.blocking
        ) { body in (body.bytes, deps.writer.intake.parser.parse(body.bytes)) }
        let parts: [ParsedPartSummary]
        switch reply {
        case .parts(let found): parts = found
        case .refused(let error): throw APIError.badRequest(error.description)
        }
        guard parts.count == 1, let part = parts.first else {
            throw APIError.badRequest("the body holds \(parts.count) reports; send one report per request")
        }
        let parsed: ParsedReportSummary
        switch part.outcome {
        case .success(let report): parsed = report
        case .failure(let error): throw APIError.badRequest(error.description)
        }
        guard slots.acquire() else {
            throw APIError(.serviceUnavailable, "all \(deps.limits.symbolicateConcurrency) symbolication slots are busy; retry shortly",
                headers: [.retryAfter: "1"])
        }
        defer { slots.release() }
        // Waiting on the worker's pipe blocks a pool thread for up to --symbolicate-timeout; at
        // most --symbolicate-concurrency (2) of the pool's threads (`BlockingWork`) at once. The
        // answer is rendered in the same pool job.
        return try await deps.blocking.run {
            let outcome = OneShotWorker.symbolicate(
                raw: part.data ?? data, format: parsed.format, executable: deps.worker.executable, arguments: deps.worker.arguments,
                timeout: deps.limits.symbolicateTimeout)
            switch outcome {
            case .symbolicated(let report):
                switch format {
                case .json: return JSONResponse.object(try ReportPrinter.document(report, group: nil))
                case .text, .apple: return JSONResponse.text(try ReportPrinter.render(report, format: format, group: nil))
                }
            case .inputError(let message):
                throw APIError.badRequest(message)
            case .workerFailed(let why):
                deps.logger.warning("on-the-spot symbolication failed", metadata: ["reason": "\(why)"])
                throw APIError(.badGateway, "the worker failed on this report: \(why)")
            case .timedOut(let seconds):
                deps.logger.warning("on-the-spot symbolication timed out; worker killed", metadata: ["seconds": "\(seconds)"])
                throw APIError(.gatewayTimeout, "symbolication did not finish within \(seconds) s; the worker was killed")
            }
        }
    }
}

/// At most `limit` holders at once; `acquire` answers at once instead of queueing, so a burst
/// of requests gets 503 + Retry-After rather than piling up worker processes.
/// Sendable: `lock` guards `inUse`; `limit` is immutable.
final class ConcurrencySlots: @unchecked Sendable {
    private let lock = NSLock()
    private var inUse = 0
    private let limit: Int

    init(_ limit: Int) { self.limit = max(1, limit) }

    func acquire() -> Bool {
        lock.withLock {
            guard inUse < limit else { return false }
            inUse += 1
            return true
        }
    }

    func release() { lock.withLock { inUse -= 1 } }
}
