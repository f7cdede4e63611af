import Foundation
import JSONFormat

/// Why a batch as a whole was refused (HTTP 400); a bad record only refuses itself.
public enum SDKBatchError: Error, Sendable, Equatable, CustomStringConvertible {
    case notJSON(String)
    case shape(String)
    case tooManyRecords(Int, limit: Int)

    public var description: String {
        switch self {
        case .notJSON(let why): "the batch is not JSON: \(why)"
        case .shape(let why): "the batch \(why)"
        case .tooManyRecords(let count, let limit): "the batch holds \(count) records; at most \(limit) are accepted per request"
        }
    }
}

/// A decoded SDK batch: `{"records": [ … ]}`, each record checked on its own.
public struct SDKBatch: Sendable {
    /// One record as decoded: checked, or the reason it was refused (with its `report_id` when
    /// one could be read).
    public enum Entry: Sendable {
        case record(SDKRecord)
        case invalid(reportId: String?, SDKFieldError)
    }

    public var entries: [Entry]

    /// At most this many records per request. The design's SDK sends at most `maxItem` (≤ 100);
    /// the margin lets a configuration grow without a server release.
    public static let maxRecords = 1_000

    public init(decoding body: Data) throws(SDKBatchError) {
        let root: JSONValue
        do {
            root = try JSONValue.parse(body)
        } catch {
            throw .notJSON(error.message)
        }
        guard case .object(let object) = root else { throw .shape("must be a JSON object {\"records\": […]}, not \(root.typeName)") }
        guard let records = object["records"] else { throw .shape("has no \"records\" array") }
        guard case .array(let items) = records else { throw .shape("field \"records\" must be an array, not \(records.typeName)") }
        guard items.count <= Self.maxRecords else { throw .tooManyRecords(items.count, limit: Self.maxRecords) }
        entries = items.map { item in
            do throws(SDKFieldError) {
                return .record(try SDKRecord(item))
            } catch {
                return .invalid(reportId: SDKRecord.reportId(of: item), error)
            }
        }
    }

    /// Indices in the order records are processed: crashes, then hangs, then the rest (the SDK's
    /// aggregation order), each in the order sent. Unreadable records come last.
    public var processingOrder: [Int] {
        entries.indices.sorted { a, b in
            let (ra, rb) = (rank(entries[a]), rank(entries[b]))
            return ra != rb ? ra < rb : a < b
        }
    }

    private func rank(_ entry: Entry) -> Int {
        switch entry {
        case .record(let record): record.monitorClass.processingRank
        case .invalid: MonitorClass.other.processingRank + 1
        }
    }
}
