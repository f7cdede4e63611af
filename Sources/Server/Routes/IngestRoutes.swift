import Foundation
import Hummingbird
import Intake
import Metrics
import SDKProtocol
import SystemCalls

/// `POST /api/v1/ingest` (scope ingest): the reporting SDK's batch upload (docs/sdk-protocol.md).
/// One answer per record; a bad record never fails its neighbours. The batch may be sent with
/// `Content-Encoding: gzip`.
func addIngestRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    let ingest = router.group("/api/v1").add(middleware: RequireScope(.ingest, deps))
    let batches = SDKBatchIntake(
        intake: deps.writer.intake, payloadLimit: deps.limits.maxReportBytes,
        budget: .init(
            inflatedBytes: deps.limits.batchInflateBytes, cpu: .seconds(deps.limits.batchCPUSeconds),
            cpuClock: SystemCall.threadCPUTime))
    ingest.post("/ingest") { request, context -> Response in
        let response: BatchResponse
        do {
            // The whole batch on one pool thread: its CPU budget is that thread's CPU time.
            (_, response) = try await deps.ingestRequest(request, context: context) { token, body in
                try batches.ingest(body.bytes, tokenNamespace: token.namespace)
            }
        } catch let error as SDKBatchError {
            ServerMetrics.reportRefused(reason: "malformed_batch")
            throw APIError.badRequest(error.description)
        }
        countRecords(response)
        return try JSONResponse.encode(response)
    }
}

/// Metrics per record: reports ingested by format and namespace, refusals, and every record by
/// status and monitor class (dropped types are counted here, and nowhere stored).
private func countRecords(_ response: BatchResponse) {
    for record in response.records {
        let namespace = record.namespace
        switch record.status {
        case .accepted, .duplicate:
            for format in record.formats ?? [] {
                ServerMetrics.reportIngested(format: format, namespace: namespace, duplicate: record.status == .duplicate)
            }
        case .refused:
            ServerMetrics.reportRefused(reason: "sdk_record")
        case .dropped:
            break
        }
        Counter(
            label: "stackline_sdk_records_total",
            dimensions: [("status", record.status.rawValue), ("monitor_class", record.monitorClass?.rawValue ?? "unreadable")]
        ).increment()
    }
}
