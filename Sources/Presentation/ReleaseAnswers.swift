import APIModel
import Foundation
import Storage

extension ReleaseHealthJSON {
    public init(_ r: ReleaseCounts) {
        func date(_ ms: Int64?) -> Date? { ms.map { Date(timeIntervalSince1970: Double($0) / 1000) } }
        self.init(
            app: r.app, version: r.version, sessions: r.sessions, crashedSessions: r.crashedSessions, users: r.users,
            crashedUsers: r.crashedUsers, adoption: r.adoption, adoptionDay: r.adoptionDay.map(ReleaseDayJSON.dayText),
            crashes: r.crashes, hangs: r.hangs, firstSeen: date(r.firstSeen), lastSeen: date(r.lastSeen),
            trend: r.days.map {
                ReleaseDayJSON(
                    day: ReleaseDayJSON.dayText($0.day), sessions: $0.sessions, users: $0.users, crashedSessions: $0.crashedSessions,
                    crashes: $0.crashes, hangs: $0.hangs)
            })
    }
}
