import Foundation
import JSONFormat
import ReportModel

/// One record of an SDK batch upload (docs/sdk-protocol.md), checked field by field.
public struct SDKRecord: Sendable, Equatable {
    /// The SDK's unique id of the record (`REPORT_ID`); unique within a namespace.
    public var reportId: String
    public var monitorType: String
    public var namespace: NamespaceName
    /// When the SDK recorded it, milliseconds since the Unix epoch.
    public var createdTime: Int64
    public var meta: SDKMeta
    /// Base64 of the payload bytes; nil for a record without stack data.
    public var payload: String?
    /// True when the payload is AES-CBC encrypted with the namespace's key.
    public var encrypted: Bool

    /// Longest `report_id` and `monitor_type` accepted, in bytes.
    public static let maxIdentifierBytes = 128

    public var monitorClass: MonitorClass { MonitorClass(monitorType: monitorType) }

    /// Checks one decoded record. Unknown keys (`is_biz`, `size` …) are ignored, so SDKs may send
    /// their table rows as they are.
    public init(_ value: JSONValue) throws(SDKFieldError) {
        guard case .object(let object) = value else {
            throw .wrongType("record", expected: "an object", got: value.typeName)
        }
        let reader = FieldReader(object: object, prefix: "")
        reportId = try Self.identifier(reader, "report_id")
        monitorType = try Self.identifier(reader, "monitor_type")
        let namespaceText = try reader.requiredString("namespace")
        do throws(NamespaceNameError) {
            namespace = try NamespaceName(namespaceText)
        } catch {
            throw .namespace(error)
        }
        guard let created = try reader.integer("created_time") else { throw .missing("created_time") }
        guard created >= 0 else { throw .invalid("created_time", "must be milliseconds since 1970, not \(created)") }
        createdTime = created
        guard let meta = try reader.object("meta") else { throw .missing("meta") }
        self.meta = try SDKMeta(meta)
        payload = try reader.string("payload")
        encrypted = try reader.bool("encrypted") ?? false
    }

    /// The `report_id` of a record that may be too broken to check, for the answer to name it.
    public static func reportId(of value: JSONValue) -> String? {
        if case .object(let object) = value, case .string(let id)? = object["report_id"] { return id }
        return nil
    }

    private static func identifier(_ reader: FieldReader, _ key: String) throws(SDKFieldError) -> String {
        let text = try reader.requiredString(key)
        if text.isEmpty { throw .invalid(key, "is empty") }
        if text.utf8.count > maxIdentifierBytes { throw .invalid(key, "is longer than \(maxIdentifierBytes) bytes") }
        if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw .invalid(key, "holds control characters")
        }
        return text
    }
}
