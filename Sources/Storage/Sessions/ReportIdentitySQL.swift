import ReportModel
import SQLInterface

/// Who and what device a report came from, as SQL over `reports r LEFT JOIN report_sessions rs`:
/// what its SDK meta said first (`report_sessions`), else what the report itself says
/// (`reports.os_version`, `device_model`, `device_id`: a hand-uploaded `.ips`, `.crash`, KSCrash
/// or MetricKit file). The one definition for searches, facets, a group's users and an ignore's
/// or the velocity alert's user count. Release health does not use it: its rates divide by the
/// SDK's launches, so only the SDK's own users may count as crashed ones (docs/releases.md).
enum ReportIdentitySQL {
    /// A distinct user: the SDK's user key, else the report's device key under the same `d:`
    /// prefix an SDK device id gets (`SessionIdentity.userKey`).
    static let userKey = "coalesce(rs.user_key, '\(SessionIdentity.devicePrefix)' || r.device_id)"
    static let deviceId = "coalesce(rs.device_id, r.device_id)"
    static let osVersion = "coalesce(rs.os_version, r.os_version)"
    static let deviceModel = "coalesce(rs.device_model, r.device_model)"
}

extension SQLStore {
    /// Who report `id` came from (`ReportIdentitySQL`); nil when there is no such report.
    public func reportOrigin(id: Int64) throws -> ReportOrigin? {
        try read { db in
            guard let row = try db.row(
                """
                SELECT \(ReportIdentitySQL.deviceModel) AS model, \(ReportIdentitySQL.osVersion) AS os,
                       coalesce(rs.user_id, \(ReportIdentitySQL.deviceId)) AS "user", rs.session_id AS session
                FROM reports r LEFT JOIN report_sessions rs ON rs.report_id = r.id WHERE r.id = ?
                """, id)
            else { return nil }
            return ReportOrigin(
                deviceModel: try row.optionalString("model"), osVersion: try row.optionalString("os"),
                user: try row.optionalString("user"), session: try row.optionalString("session"))
        }
    }
}
