import Foundation
import JobQueue
import ReportFormats
import ReportModel
import SDKProtocol

/// An SDK batch upload (`POST /api/v1/ingest`) → stored reports, one answer per record.
///
/// Every report goes through `ReportIntake`, so a payload is split, parsed, tagged and refused
/// exactly as `submit` would. Crash records are stored before hang records, as the SDK's own
/// aggregation takes crashes first; their jobs also carry crash priority.
public struct SDKBatchIntake: Sendable {
    public let intake: ReportIntake
    /// Largest report accepted after decompression, in bytes.
    public let payloadLimit: Int

    public init(intake: ReportIntake, payloadLimit: Int) {
        self.intake = intake
        self.payloadLimit = payloadLimit
    }

    /// Stores the batch's crash and hang records. `tokenNamespace` is the namespace the upload's
    /// token is restricted to: records naming another are refused one by one. Throws
    /// `SDKBatchError` when the body is no batch at all, and database errors (the whole request
    /// then fails and may be sent again: records already stored answer "duplicate").
    public func ingest(_ body: Data, tokenNamespace: String?) throws -> BatchResponse {
        let batch = try SDKBatch(decoding: body)
        var namespaces: [NamespaceName: StoredNamespace?] = [:]
        // Records of this batch already stored, by namespace and report_id.
        var stored: [NamespaceName: [String: [Int64]]] = [:]
        var outcomes: [RecordOutcome] = []
        for index in batch.processingOrder {
            let record: SDKRecord
            switch batch.entries[index] {
            case .invalid(let reportId, let error):
                outcomes.append(RecordOutcome(index: index, reportId: reportId, status: .refused, reason: "\(error)"))
                continue
            case .record(let checked):
                record = checked
            }
            func answer(_ status: RecordStatus, ids: [Int64]? = nil, formats: [String]? = nil, _ reason: String? = nil) {
                outcomes.append(RecordOutcome(
                    index: index, reportId: record.reportId, status: status, ids: ids, formats: formats, reason: reason,
                    namespace: record.namespace.value, monitorClass: record.monitorClass))
            }
            if let tokenNamespace, tokenNamespace != record.namespace.value {
                answer(.refused, "namespace '\(record.namespace)': this token may only upload into namespace '\(tokenNamespace)'")
                continue
            }
            let found: StoredNamespace?
            if let cached = namespaces[record.namespace] {
                found = cached
            } else {
                found = try intake.db.namespace(record.namespace.value)
                namespaces[record.namespace] = .some(found)
            }
            guard let namespace = found else {
                answer(.refused, "namespace '\(record.namespace)' does not exist (`stackline namespaces configure` or `set-key` creates it)")
                continue
            }
            guard record.monitorClass.becomesReport else {
                answer(.dropped, "monitor type '\(record.monitorType)' is acknowledged and not stored: only \(MonitorClass.crashType) and \(MonitorClass.hangType) records become reports")
                continue
            }
            if let ids = stored[record.namespace]?[record.reportId] {
                answer(.duplicate, ids: ids, "report_id sent earlier in this batch")
                continue
            }
            let earlier = try intake.db.sdkRecordReports(namespace: record.namespace.value, sdkReportId: record.reportId)
            if !earlier.isEmpty {
                answer(.duplicate, ids: earlier, "report_id already uploaded into namespace '\(record.namespace)'")
                continue
            }
            switch try store(record, namespace: namespace) {
            case .success(let result):
                stored[record.namespace, default: [:]][record.reportId] = result.ids
                answer(result.duplicate ? .duplicate : .accepted, ids: result.ids, formats: result.formats, result.note)
            case .failure(let reason):
                answer(.refused, reason.description)
            }
        }
        return BatchResponse(outcomes)
    }

    private struct Stored {
        var ids: [Int64]
        var formats: [String]
        /// Every report was already stored (identical bytes).
        var duplicate: Bool
        var note: String?
    }

    /// A reason a record was refused, as the answer states it.
    private struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    /// Decodes the payload and stores the reports it holds; a record-level refusal is a
    /// `.failure`, a database error is thrown.
    private func store(_ record: SDKRecord, namespace: StoredNamespace) throws -> Result<Stored, Refusal> {
        guard let payload = record.payload, !payload.isEmpty else {
            return .failure(Refusal(description: "payload is missing: a \(record.monitorType) record needs its stack data"))
        }
        var key: NamespaceKey?
        if record.encrypted {
            guard let bytes = namespace.aesKey, let stored = try? NamespaceKey(bytes: bytes) else {
                return .failure(Refusal(description: "payload is marked encrypted, but namespace '\(record.namespace)' has no key (`stackline namespaces set-key`)"))
            }
            key = stored
        }
        let data: Data
        do {
            data = try PayloadDecoder.decode(payload, decryptingWith: key, limit: payloadLimit)
        } catch {
            return .failure(Refusal(description: "\(error)"))
        }
        let outcomes: [ReportIntake.Outcome]
        do {
            outcomes = try intake.submit(
                data,
                defaults: .init(app: record.meta.appName, version: record.meta.appVersion, namespace: record.namespace.value))
        } catch let error as ReportParseError {
            return .failure(Refusal(description: "payload: \(error)"))
        }
        var ids: [Int64] = []
        var formats: [String] = []
        var fresh = false
        var refusedParts: [String] = []
        for (n, outcome) in outcomes.enumerated() {
            switch outcome {
            case .stored(let submitted, let format):
                ids.append(submitted.reportId)
                formats.append(format)
                fresh = fresh || !submitted.duplicate
            case .refused(let error):
                refusedParts.append("report \(n + 1) of the payload: \(error)")
            }
        }
        guard !ids.isEmpty else {
            return .failure(Refusal(description: "payload: " + refusedParts.joined(separator: "; ")))
        }
        try intake.db.recordSDKReports(
            SDKRecordRow(
                namespace: record.namespace.value, sdkReportId: record.reportId, monitorType: record.monitorType,
                createdTime: record.createdTime, meta: String(decoding: record.meta.encoded(), as: UTF8.self)),
            reportIds: ids)
        let note = refusedParts.isEmpty ? (fresh ? nil : "identical report bytes already stored") : refusedParts.joined(separator: "; ")
        return .success(Stored(ids: ids, formats: formats, duplicate: !fresh, note: note))
    }
}
