import Foundation
import JSONFormat
import ReportModel

/// A record's `meta`: the SDK's basic fields (its `PCTCommonModel`), kept whole for storage, with
/// the ones the server reads checked to be strings.
public struct SDKMeta: Sendable, Equatable {
    /// Every field as sent, unknown ones included (SDKs add their own).
    public let fields: [String: JSONValue]

    /// The design caps a record's meta at 10 KB (the server's "upper limit of meta it consumes").
    public static let maxEncodedBytes = 10 * 1024

    /// The fields the protocol defines, all strings (docs/sdk-protocol.md maps them to the SDK's
    /// `xxx_APP_NAME`, `SYS_PHONE_MODEL` … names).
    public static let stringKeys = [
        "app_name", "app_version", "build_task_id", "device_model", "os_version", "session_id", "device_id",
        "system", "brand", "platform", "package_name", "app_mode", "user_id", "channel", "monitor_version",
    ]

    /// The keys sessions and release health are counted by (app, version, OS, model, and the
    /// session, user and device ids).
    public static let identityKeys = ["app_name", "app_version", "os_version", "device_model", "session_id", "user_id", "device_id"]
    /// Longest value of an identity key, in bytes.
    public static let maxIdentityBytes = ReportLimits.maxIdentityBytes

    public init(_ fields: [String: JSONValue]) throws(SDKFieldError) {
        let reader = FieldReader(object: fields, prefix: "meta.")
        for key in Self.stringKeys { _ = try reader.string(key) }
        // The keys release health counts by are stored as columns and shown in tables: bounded,
        // and free of control characters, like `report_id`.
        for key in Self.identityKeys {
            guard let text = try reader.string(key) else { continue }
            if text.utf8.count > Self.maxIdentityBytes { throw .invalid("meta." + key, "is longer than \(Self.maxIdentityBytes) bytes") }
            if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                throw .invalid("meta." + key, "holds control characters")
            }
        }
        self.fields = fields
        let size = encoded().count
        if size > Self.maxEncodedBytes {
            throw .invalid("meta", "is \(size) bytes as JSON; at most \(Self.maxEncodedBytes) are accepted")
        }
    }

    /// A protocol-defined string field (nil when absent or empty).
    public func string(_ key: String) -> String? {
        if case .string(let text)? = fields[key], !text.isEmpty { return text }
        return nil
    }

    /// The app's name: names reports that do not name their app.
    public var appName: String? { string("app_name") }
    /// The app's version: versions reports that do not carry one.
    public var appVersion: String? { string("app_version") }

    /// Compact JSON, keys sorted: what is stored.
    public func encoded() -> Data { JSONValue.object(fields).encoded() }
}
