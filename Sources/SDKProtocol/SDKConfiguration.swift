import Foundation
import JSONFormat
import ReportModel

/// Why a configuration document was refused.
public enum SDKConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    case notJSON(String)
    case field(SDKFieldError)

    public var description: String {
        switch self {
        case .notJSON(let why): "the configuration is not JSON: \(why)"
        case .field(let error): "\(error)"
        }
    }
}

/// A namespace's remote configuration for the SDK: the design's `PCTConfigurationModel`, field
/// for field, with its ranges checked (docs/sdk-protocol.md).
public struct SDKConfiguration: Sendable, Equatable, Codable {
    /// One `monitorList` entry: the design's `PCTItemModel`.
    public struct MonitorItem: Sendable, Equatable, Codable {
        public var type: String
        public var onlyWifi: Bool
        public var isRealtime: Bool
        public var isUploadPayload: Bool

        public init(type: String, onlyWifi: Bool = false, isRealtime: Bool = false, isUploadPayload: Bool = false) {
            self.type = type
            self.onlyWifi = onlyWifi
            self.isRealtime = isRealtime
            self.isUploadPayload = isUploadPayload
        }
    }

    /// Where the SDK uploads; nil serves this server's own ingest URL.
    public var url: String?
    public var isUpload: Bool
    public var isGather: Bool
    public var isUpdateClear: Bool
    public var maxBodyMByte: Int
    public var periodicTimerSecond: Int
    public var maxItem: Int
    public var maxFlowMByte: Int
    public var expirationDay: Int
    public var monitorList: [MonitorItem]

    /// The design's default configuration (`setDefaultConfigurationModel`), without its placeholder URL.
    public static let designDefault = SDKConfiguration(
        url: nil, isUpload: true, isGather: true, isUpdateClear: true, maxBodyMByte: 1, periodicTimerSecond: 5,
        maxItem: 100, maxFlowMByte: 20, expirationDay: 15,
        monitorList: [
            MonitorItem(type: MonitorClass.crashType, isRealtime: true, isUploadPayload: true),
            MonitorItem(type: MonitorClass.hangType),
            MonitorItem(type: "appBoot"),
            MonitorItem(type: "net"),
            MonitorItem(type: "netError"),
        ])

    /// The design's ranges. Its defaults sit on the upper bounds (`maxItem` 100 with "range < 100"),
    /// so the bounds are inclusive.
    public static let ranges: [(key: String, range: ClosedRange<Int64>, unit: String)] = [
        ("maxBodyMByte", 1...3, "MB"),
        ("periodicTimerSecond", 1...30, "seconds"),
        ("maxItem", 1...100, "records"),
        ("maxFlowMByte", 1...100, "MB"),
        ("expirationDay", 1...30, "days"),
    ]

    static let flags = ["isUpload", "isGather", "isUpdateClear"]
    static let itemKeys: Set<String> = ["type", "onlyWifi", "isRealtime", "isUploadPayload"]

    public init(
        url: String?, isUpload: Bool, isGather: Bool, isUpdateClear: Bool, maxBodyMByte: Int, periodicTimerSecond: Int,
        maxItem: Int, maxFlowMByte: Int, expirationDay: Int, monitorList: [MonitorItem]
    ) {
        self.url = url
        self.isUpload = isUpload
        self.isGather = isGather
        self.isUpdateClear = isUpdateClear
        self.maxBodyMByte = maxBodyMByte
        self.periodicTimerSecond = periodicTimerSecond
        self.maxItem = maxItem
        self.maxFlowMByte = maxFlowMByte
        self.expirationDay = expirationDay
        self.monitorList = monitorList
    }

    /// Reads and checks a configuration document. Keys left out keep the design's defaults;
    /// unknown keys, wrong types and values out of range are refused, naming the key.
    public init(validating data: Data) throws(SDKConfigurationError) {
        let root: JSONValue
        do {
            root = try JSONValue.parse(data)
        } catch {
            throw .notJSON(error.message)
        }
        do throws(SDKFieldError) {
            self = try Self.read(root)
        } catch {
            throw .field(error)
        }
    }

    /// The configuration a namespace serves: what was stored (nil: the design's defaults).
    public init(storedJSON: String?) throws(SDKConfigurationError) {
        guard let storedJSON else {
            self = .designDefault
            return
        }
        try self.init(validating: Data(storedJSON.utf8))
    }

    private static func read(_ root: JSONValue) throws(SDKFieldError) -> SDKConfiguration {
        guard case .object(let object) = root else {
            throw .wrongType("the configuration", expected: "a JSON object", got: root.typeName)
        }
        let known = Set(flags + ranges.map(\.key) + ["url", "monitorList"])
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) { throw .unknownKey(unknown) }
        let reader = FieldReader(object: object, prefix: "")
        var config = designDefault
        if let url = try reader.string("url") {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""),
                parsed.host?.isEmpty == false
            else { throw .invalid("url", "must be an absolute http or https URL, not '\(url)'") }
            config.url = url
        }
        config.isUpload = try reader.bool("isUpload") ?? config.isUpload
        config.isGather = try reader.bool("isGather") ?? config.isGather
        config.isUpdateClear = try reader.bool("isUpdateClear") ?? config.isUpdateClear
        var numbers: [String: Int] = [:]
        for (key, range, unit) in ranges {
            guard let value = try reader.integer(key) else { continue }
            guard range.contains(value) else {
                throw .invalid(key, "must be \(range.lowerBound)…\(range.upperBound) \(unit), not \(value)")
            }
            numbers[key] = Int(value)
        }
        config.maxBodyMByte = numbers["maxBodyMByte"] ?? config.maxBodyMByte
        config.periodicTimerSecond = numbers["periodicTimerSecond"] ?? config.periodicTimerSecond
        config.maxItem = numbers["maxItem"] ?? config.maxItem
        config.maxFlowMByte = numbers["maxFlowMByte"] ?? config.maxFlowMByte
        config.expirationDay = numbers["expirationDay"] ?? config.expirationDay
        if let items = try reader.array("monitorList") {
            config.monitorList = try items.enumerated().map { (index, item) throws(SDKFieldError) in
                try monitorItem(item, field: "monitorList[\(index)]")
            }
            var seen = Set<String>()
            for item in config.monitorList where !seen.insert(item.type).inserted {
                throw .invalid("monitorList", "lists type '\(item.type)' twice")
            }
        }
        return config
    }

    private static func monitorItem(_ value: JSONValue, field: String) throws(SDKFieldError) -> MonitorItem {
        guard case .object(let object) = value else { throw .wrongType(field, expected: "an object", got: value.typeName) }
        if let unknown = object.keys.sorted().first(where: { !itemKeys.contains($0) }) {
            throw .unknownKey("\(field).\(unknown)")
        }
        let reader = FieldReader(object: object, prefix: field + ".")
        let type = try reader.requiredString("type")
        guard !type.isEmpty, type.utf8.count <= SDKRecord.maxIdentifierBytes else {
            throw .invalid(field + ".type", "must be 1–\(SDKRecord.maxIdentifierBytes) bytes")
        }
        return MonitorItem(
            type: type, onlyWifi: try reader.bool("onlyWifi") ?? false, isRealtime: try reader.bool("isRealtime") ?? false,
            isUploadPayload: try reader.bool("isUploadPayload") ?? false)
    }

    /// The document the SDK fetches: `{namespace: configuration}`, the shape of the design's
    /// `configurationDictionary`, with `url` filled by `defaultURL` when none was configured.
    public func served(namespace: NamespaceName, defaultURL: String) -> Data {
        var config = self
        config.url = config.url ?? defaultURL
        // Plain strings, booleans and integers always encode.
        return (try? JSONStyle.compact.encode([namespace.value: config])) ?? Data("{}".utf8)
    }

    /// Compact JSON with sorted keys: what is stored.
    public func stored() -> String {
        String(decoding: (try? JSONStyle.compact.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
