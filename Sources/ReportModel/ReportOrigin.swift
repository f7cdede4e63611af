/// Who and what a stored report came from, as the server knows it: its SDK meta's values, else
/// what the report said itself (`DeviceInfo`). Shown on the report page; every value is data.
public struct ReportOrigin: Sendable, Equatable {
    public var deviceModel: String?
    public var osVersion: String?
    /// The SDK's user id, else a device id (the SDK's or the report's own key).
    public var user: String?
    public var session: String?

    public init(deviceModel: String? = nil, osVersion: String? = nil, user: String? = nil, session: String? = nil) {
        self.deviceModel = deviceModel
        self.osVersion = osVersion
        self.user = user
        self.session = session
    }

    public var isEmpty: Bool { deviceModel == nil && osVersion == nil && user == nil && session == nil }
}
