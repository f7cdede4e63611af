import Foundation
import Storage
import ReportFormats
import ReportModel
import SDKProtocol
import WorkerProtocol

/// An SDK batch upload (`POST /api/v1/ingest`) → stored reports, one answer per record.
///
/// Every report goes through `ReportIntake`, so a payload is split, parsed, tagged and refused
/// exactly as `submit` would. Crash records are stored before hang records, as the SDK's own
/// aggregation takes crashes first; their jobs also carry crash priority.
public struct SDKBatchIntake: Sendable {
    public let intake: ReportIntake
    /// Largest report accepted after decompression, in bytes.
    public let payloadLimit: Int
    public let budget: Budget

    /// What one batch may cost the server, whatever it holds: past either bound, the batch's
    /// remaining reports are refused (records stored before stay stored), so a batch of bombs
    /// costs about what one bomb does (issue 28, F4).
    public struct Budget: Sendable {
        /// Bytes all the batch's payloads may inflate to, together. A payload refused as too
        /// large or as a bomb is charged its whole allowance, what it could have cost: a batch
        /// that sends bombs gets no more inflating done.
        public var inflatedBytes: Int
        /// CPU the batch may use, read from `cpuClock` (decoding, decrypting, inflating, storing).
        public var cpu: Duration
        /// CPU used so far by the thread the batch runs on (`ingest` runs on one thread).
        public var cpuClock: @Sendable () -> Duration

        public init(inflatedBytes: Int, cpu: Duration, cpuClock: @escaping @Sendable () -> Duration) {
            self.inflatedBytes = inflatedBytes
            self.cpu = cpu
            self.cpuClock = cpuClock
        }

        var inflateReason: String { "batch inflate budget of \(inflatedBytes) bytes spent; send this record in a later batch" }
        var cpuReason: String { "batch CPU budget of \(cpu) spent; send this record in a later batch" }
    }

    public init(intake: ReportIntake, payloadLimit: Int, budget: Budget) {
        self.intake = intake
        self.payloadLimit = payloadLimit
        self.budget = budget
    }

    /// Stores the batch's crash and hang records. `tokenNamespace` is the namespace the upload's
    /// token is restricted to: records naming another are refused one by one. Throws
    /// `SDKBatchError` when the body is no batch at all, and database errors (the whole request
    /// then fails and may be sent again: records already stored answer "duplicate").
    public func ingest(_ body: Data, tokenNamespace: String?) throws -> BatchResponse {
        let started = budget.cpuClock()
        let batch = try SDKBatch(decoding: body)
        // Bytes the payloads inflated to so far (refused bombs at their allowance), at most
        // `budget.inflatedBytes`; and the reason every later report is refused, once spent.
        var inflated = 0
        var spent: String?
        var namespaces: [NamespaceName: StoredNamespace?] = [:]
        // Records of this batch already stored, by namespace and report_id.
        var stored: [NamespaceName: [String: [Int64]]] = [:]
        var outcomes: [RecordOutcome] = []
        // Launches (`appBoot`), counted together after the loop in one transaction.
        var launches: [(index: Int, record: SDKRecord, launch: SessionLaunch)] = []
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
            if record.monitorClass == .session {
                do throws(SDKFieldError) {
                    launches.append((index, record, try SessionLaunch(record)))
                } catch {
                    answer(.refused, "\(MonitorClass.sessionType) record: \(error)")
                }
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
            if spent == nil, budget.cpuClock() - started > budget.cpu { spent = budget.cpuReason }
            if spent == nil, inflated >= budget.inflatedBytes { spent = budget.inflateReason }
            if let spent {
                answer(.refused, spent)
                continue
            }
            switch try store(record, namespace: namespace, inflated: &inflated) {
            case .success(let result):
                stored[record.namespace, default: [:]][record.reportId] = result.ids
                answer(result.duplicate ? .duplicate : .accepted, ids: result.ids, formats: result.formats, result.note)
            case .failure(let reason):
                answer(.refused, reason.description)
            }
        }
        let counted = try intake.db.recordLaunches(launches.map(\.launch))
        for (entry, fresh) in zip(launches, counted) {
            outcomes.append(RecordOutcome(
                index: entry.index, reportId: entry.record.reportId, status: fresh ? .accepted : .duplicate,
                reason: fresh ? nil : "report_id already counted as a session in namespace '\(entry.record.namespace)'",
                namespace: entry.record.namespace.value, monitorClass: .session))
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
    /// `.failure`, a database error is thrown. `inflated` (the batch's bytes inflated so far,
    /// below `budget.inflatedBytes`) grows by what this payload inflated to, or was allowed to.
    private func store(_ record: SDKRecord, namespace: StoredNamespace, inflated: inout Int) throws -> Result<Stored, Refusal> {
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
        let allowance = min(payloadLimit, budget.inflatedBytes - inflated)
        do {
            data = try PayloadDecoder.decode(payload, decryptingWith: key, limit: allowance)
            // overflow: data.count <= allowance <= budget.inflatedBytes - inflated
            inflated += data.count
        } catch {
            switch error {
            case .gzip(.tooLarge(_)) where allowance < payloadLimit:
                // Past what is left of the batch's budget rather than past the report limit.
                inflated += allowance
                return .failure(Refusal(description: budget.inflateReason))
            case .gzip(.tooLarge(_)), .gzip(.ratioTooHigh(_)):
                inflated += allowance
            default:
                break
            }
            return .failure(Refusal(description: "\(error)"))
        }
        let outcomes: [ReportIntake.Outcome]
        do {
            outcomes = try intake.submit(
                data,
                defaults: .init(app: record.meta.appName, version: record.meta.appVersion, namespace: record.namespace.value))
        } catch let error as ParseRefusal {
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
            reportIds: ids, session: SessionIdentity(record.meta))
        let note = refusedParts.isEmpty ? (fresh ? nil : "identical report bytes already stored") : refusedParts.joined(separator: "; ")
        return .success(Stored(ids: ids, formats: formats, duplicate: !fresh, note: note))
    }
}
