import Foundation

/// The `releases --json` shape of one app version (`GET /api/v1/releases`): its sessions and
/// users, the exact crashed ones, and the rates derived from them. A rate is null, never made
/// up, where there is nothing to divide by (a version known only from reports uploaded by hand).
public struct ReleaseHealthJSON: Codable, Sendable, Equatable {
    public var app: String
    public var version: String
    public var sessions: Int
    public var crashedSessions: Int
    /// 1 − crashedSessions / sessions, 0 … 1; null without sessions.
    public var crashFreeSessions: Double?
    /// Distinct users, estimated (HyperLogLog: exact up to 2,048, then a relative error under 0.02).
    public var users: Int
    public var crashedUsers: Int
    /// 1 − crashedUsers / users, 0 … 1; null without users.
    public var crashFreeUsers: Double?
    /// This version's share of the sessions of `adoptionDay`, the app's last day with sessions.
    public var adoption: Double?
    public var adoptionDay: String?
    public var crashes: Int
    public var hangs: Int
    /// Hang reports per 1,000 sessions; null without sessions.
    public var hangsPer1000Sessions: Double?
    public var firstSeen: Date?
    public var lastSeen: Date?
    public var trend: [ReleaseDayJSON]

    public init(
        app: String, version: String, sessions: Int, crashedSessions: Int, users: Int, crashedUsers: Int, adoption: Double?,
        adoptionDay: String?, crashes: Int, hangs: Int, firstSeen: Date?, lastSeen: Date?, trend: [ReleaseDayJSON]
    ) {
        self.app = app
        self.version = version
        self.sessions = sessions
        self.crashedSessions = crashedSessions
        crashFreeSessions = Self.crashFree(crashedSessions, of: sessions)
        self.users = users
        self.crashedUsers = crashedUsers
        crashFreeUsers = Self.crashFree(crashedUsers, of: users)
        self.adoption = adoption
        self.adoptionDay = adoptionDay
        self.crashes = crashes
        self.hangs = hangs
        hangsPer1000Sessions = sessions > 0 ? Double(hangs) * 1000 / Double(sessions) : nil
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.trend = trend
    }

    /// The crash-free share, null without a total. Clamped at 0: users are estimated, crashed
    /// users counted exactly, so with few users the crashed ones may exceed the estimate; and a
    /// crash may name a session whose launch was never sent.
    public static func crashFree(_ crashed: Int, of total: Int) -> Double? {
        guard total > 0 else { return nil }
        return max(0, 1 - Double(crashed) / Double(total))
    }

    enum CodingKeys: String, CodingKey {
        case app, version, sessions, crashedSessions, crashFreeSessions, users, crashedUsers, crashFreeUsers, adoption, adoptionDay
        case crashes, hangs, hangsPer1000Sessions, firstSeen, lastSeen, trend
    }

    /// Every key is written, null included: a client sees that a rate is unknown, not missing.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(app, forKey: .app)
        try c.encode(version, forKey: .version)
        try c.encode(sessions, forKey: .sessions)
        try c.encode(crashedSessions, forKey: .crashedSessions)
        try c.encode(crashFreeSessions, forKey: .crashFreeSessions)
        try c.encode(users, forKey: .users)
        try c.encode(crashedUsers, forKey: .crashedUsers)
        try c.encode(crashFreeUsers, forKey: .crashFreeUsers)
        try c.encode(adoption, forKey: .adoption)
        try c.encode(adoptionDay, forKey: .adoptionDay)
        try c.encode(crashes, forKey: .crashes)
        try c.encode(hangs, forKey: .hangs)
        try c.encode(hangsPer1000Sessions, forKey: .hangsPer1000Sessions)
        try c.encode(firstSeen, forKey: .firstSeen)
        try c.encode(lastSeen, forKey: .lastSeen)
        try c.encode(trend, forKey: .trend)
    }
}

/// One UTC day of a release's trend.
public struct ReleaseDayJSON: Codable, Sendable, Equatable {
    /// `yyyy-MM-dd`, UTC.
    public var day: String
    public var sessions: Int
    public var users: Int
    public var crashedSessions: Int
    public var crashFreeSessions: Double?
    public var crashes: Int
    public var hangs: Int

    public init(day: String, sessions: Int, users: Int, crashedSessions: Int, crashes: Int, hangs: Int) {
        self.day = day
        self.sessions = sessions
        self.users = users
        self.crashedSessions = crashedSessions
        crashFreeSessions = ReleaseHealthJSON.crashFree(crashedSessions, of: sessions)
        self.crashes = crashes
        self.hangs = hangs
    }

    enum CodingKeys: String, CodingKey { case day, sessions, users, crashedSessions, crashFreeSessions, crashes, hangs }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(day, forKey: .day)
        try c.encode(sessions, forKey: .sessions)
        try c.encode(users, forKey: .users)
        try c.encode(crashedSessions, forKey: .crashedSessions)
        try c.encode(crashFreeSessions, forKey: .crashFreeSessions)
        try c.encode(crashes, forKey: .crashes)
        try c.encode(hangs, forKey: .hangs)
    }

    /// A UTC day number (days since 1970-01-01) as `yyyy-MM-dd`.
    public static func dayText(_ day: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.string(from: Date(timeIntervalSince1970: Double(day) * 86_400))
    }
}
