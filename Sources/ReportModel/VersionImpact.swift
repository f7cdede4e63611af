import Foundation

/// A group's reports, users and sessions in one app version ("" is a report without one):
/// what the database counts and what `group FP --json` prints, one type for both.
public struct VersionImpact: Sendable, Codable, Equatable {
    public var version: String
    public var reports: Int
    public var users: Int
    public var sessions: Int

    public init(version: String, reports: Int, users: Int, sessions: Int) {
        self.version = version
        self.reports = reports
        self.users = users
        self.sessions = sessions
    }
}
