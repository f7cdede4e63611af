import Foundation
import SDKProtocol
import Storage

extension SessionIdentity {
    /// The session, user and device an SDK record's meta names (bounded by `SDKMeta`).
    init(_ meta: SDKMeta) {
        self.init(
            app: meta.appName, version: meta.appVersion, sessionId: meta.string("session_id"), userId: meta.string("user_id"),
            deviceId: meta.string("device_id"), osVersion: meta.string("os_version"), deviceModel: meta.string("device_model"))
    }
}

extension SessionLaunch {
    /// An `appBoot` record as a launch to count. Its app and version are what release health is
    /// kept by, so a launch without them is refused (that record only).
    init(_ record: SDKRecord) throws(SDKFieldError) {
        guard let app = record.meta.appName else { throw .missing("meta.app_name") }
        guard let version = record.meta.appVersion else { throw .missing("meta.app_version") }
        self.init(
            namespace: record.namespace.value, sdkReportId: record.reportId, createdTime: record.createdTime, app: app,
            version: version, osVersion: record.meta.string("os_version") ?? "", deviceModel: record.meta.string("device_model") ?? "",
            userKey: SessionIdentity(record.meta).userKey)
    }
}
