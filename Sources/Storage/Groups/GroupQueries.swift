import Foundation
import ReportModel
import SQLInterface

/// Which groups `stackline groups` lists.
public struct GroupFilter: Sendable {
    public var kind: ReportKind?
    public var app: String?
    /// Count only reports of this app version.
    public var version: String?
    /// Count only reports received at or after this time (ms since the epoch).
    public var since: Int64?
    /// Count only reports uploaded into this SDK namespace.
    public var namespace: String?
    /// Only groups in this state (as stored: an ignore whose time has passed counts as ignored
    /// until a report wakes it).
    public var state: GroupStateName?
    public var sort: GroupSort
    public var limit: Int

    public init(
        kind: ReportKind? = nil, app: String? = nil, version: String? = nil, since: Int64? = nil, limit: Int = 20,
        namespace: String? = nil, state: GroupStateName? = nil, sort: GroupSort = .reports
    ) {
        self.kind = kind
        self.app = app
        self.version = version
        self.since = since
        self.namespace = namespace
        self.state = state
        self.sort = sort
        self.limit = limit
    }
}

/// What a group list is ordered by, most first; ties go to the most recently seen.
public enum GroupSort: String, Sendable, CaseIterable, Codable {
    case reports, users, sessions, lastSeen
}

/// One group as the queries show it.
public struct GroupSummary: Sendable, Codable, Equatable {
    public var fingerprint: String
    public var kind: ReportKind
    public var title: String
    /// Reports counted under the filter (all reports when unfiltered).
    public var count: Int
    public var firstSeen: Date
    public var lastSeen: Date
    /// Reports per app version over the group's whole life ("" is a report without a version).
    public var versions: [String: Int]
    public var rulesVersion: Int
    public var app: String?
    public var representativeReportId: Int64?
    public var frames: [String]
    /// Distinct users (SDK `user_id`, else `device_id`) and sessions among the reports counted;
    /// reports that name neither (a `.crash` uploaded by hand) count in `count` only.
    public var users: Int
    public var sessions: Int
    public var triage: GroupTriage
}

/// A group with its latest members, who it hurt per version, and the groups merged into it.
public struct GroupDetail: Sendable {
    public var summary: GroupSummary
    public var latestReportIds: [Int64]
    /// Newest version first ("" last).
    public var byVersion: [VersionImpact]
    public var mergedGroups: [String]
}


/// A debug file reports needed and (as of their last processing) could not use, with how many
/// reports and groups it blocks and when last. Its JSON is the file's fields beside the counts:
/// `{"buildId", "imageName", "status", "detail", "reportCount", "groupCount", "lastSeen",
/// "lastProcessed", "sources"}`; `sources` (each symbol source's last answer) is joined when
/// read, never stored with the row.
public struct MissingSymbolSummary: Sendable, Codable, Equatable {
    /// The build id, the image's name, and the status and detail of its latest processing.
    public var file: MissingDebugFile
    public var reportCount: Int
    /// Distinct groups the reports are filed under.
    public var groupCount: Int
    /// When the newest of the reports was received.
    public var lastSeen: Date
    /// When the newest of the reports was processed: a file stored after it is not yet tried.
    public var lastProcessed: Date
    public var sources: [SymbolSourceAnswer]?

    public init(
        file: MissingDebugFile, reportCount: Int, groupCount: Int = 0, lastSeen: Date, lastProcessed: Date? = nil,
        sources: [SymbolSourceAnswer]? = nil
    ) {
        self.file = file
        self.reportCount = reportCount
        self.groupCount = groupCount
        self.lastSeen = lastSeen
        self.lastProcessed = lastProcessed ?? lastSeen
        self.sources = sources
    }

    enum CodingKeys: String, CodingKey { case reportCount, groupCount, lastSeen, lastProcessed, sources }

    public init(from decoder: Decoder) throws {
        file = try MissingDebugFile(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        reportCount = try c.decode(Int.self, forKey: .reportCount)
        groupCount = try c.decodeIfPresent(Int.self, forKey: .groupCount) ?? 0
        lastSeen = try c.decode(Date.self, forKey: .lastSeen)
        lastProcessed = try c.decodeIfPresent(Date.self, forKey: .lastProcessed) ?? lastSeen
        sources = try c.decodeIfPresent([SymbolSourceAnswer].self, forKey: .sources)
    }

    public func encode(to encoder: Encoder) throws {
        try file.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(reportCount, forKey: .reportCount)
        try c.encode(groupCount, forKey: .groupCount)
        try c.encode(lastSeen, forKey: .lastSeen)
        try c.encode(lastProcessed, forKey: .lastProcessed)
        try c.encodeIfPresent(sources, forKey: .sources)
    }
}

public enum GroupQueryError: Error, CustomStringConvertible, Equatable {
    case ambiguousFingerprint(String, [String])

    public var description: String {
        switch self {
        case .ambiguousFingerprint(let prefix, let matches):
            "fingerprint prefix '\(prefix)' matches \(matches.count) groups: \(matches.prefix(5).joined(separator: ", "))"
        }
    }
}

extension SQLStore {
    /// Groups, most frequent first. Unfiltered counts come from the maintained `groups` table
    /// (users and sessions too: `GroupCounters`), most filtered ones from the counters by day
    /// and version (`CountedGroupFilter`); the rest (a namespace, an order that only the
    /// window's reports decide) count the members under the filter.
    public func groups(_ filter: GroupFilter) throws -> [GroupSummary] {
        try read { db in
            var conditions: [String] = []
            var arguments: [SQLValue] = []
            if let kind = filter.kind {
                conditions.append("g.kind = ?")
                arguments.append(kind.rawValue.sqlValue)
            }
            if let app = filter.app {
                conditions.append("g.app = ?")
                arguments.append(app.sqlValue)
            }
            if let state = filter.state {
                conditions.append("COALESCE((SELECT gs.state FROM group_states gs WHERE gs.fingerprint = g.fingerprint), 'open') = ?")
                arguments.append(state.rawValue.sqlValue)
            }
            let rows: [SQLRow]
            if filter.version == nil && filter.since == nil && filter.namespace == nil {
                let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
                let order = switch filter.sort {
                case .reports: "g.count DESC, g.last_seen DESC"
                case .users: "g.users DESC, g.count DESC, g.last_seen DESC"
                case .sessions: "g.sessions DESC, g.count DESC, g.last_seen DESC"
                case .lastSeen: "g.last_seen DESC, g.count DESC"
                }
                rows = try db.rows(
                    """
                    SELECT \(GroupRows.columns), g.count AS n, g.first_seen AS first, g.last_seen AS last, g.users AS u, g.sessions AS se
                    FROM groups g \(whereClause) ORDER BY \(order), g.fingerprint LIMIT ?
                    """,
                    arguments + [filter.limit.sqlValue])
            } else if let counted = CountedGroupFilter(filter) {
                rows = try counted.rows(db, conditions: conditions, arguments: arguments, sort: filter.sort, limit: filter.limit)
            } else {
                if let version = filter.version {
                    conditions.append("COALESCE(r.version, '') = ?")
                    arguments.append(version.sqlValue)
                }
                if let since = filter.since {
                    conditions.append("r.received_at >= ?")
                    arguments.append(since.sqlValue)
                }
                if let namespace = filter.namespace {
                    conditions.append("r.namespace = ?")
                    arguments.append(namespace.sqlValue)
                }
                let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
                let order = switch filter.sort {
                case .reports: "n DESC, last DESC"
                case .users: "u DESC, n DESC, last DESC"
                case .sessions: "se DESC, n DESC, last DESC"
                case .lastSeen: "last DESC, n DESC"
                }
                rows = try db.rows(
                    """
                    SELECT \(GroupRows.columns), COUNT(*) AS n, MIN(r.received_at) AS first, MAX(r.received_at) AS last,
                        COUNT(DISTINCT \(ReportIdentitySQL.userKey)) AS u, COUNT(DISTINCT rs.session_id) AS se
                    FROM results s JOIN reports r ON r.id = s.report_id JOIN groups g ON g.fingerprint = s.fingerprint
                    LEFT JOIN report_sessions rs ON rs.report_id = s.report_id
                    \(whereClause)
                    GROUP BY g.fingerprint ORDER BY \(order), g.fingerprint LIMIT ?
                    """,
                    arguments + [filter.limit.sqlValue])
            }
            return try rows.map { try GroupRows.summary(db, $0) }
        }
    }

    /// The whole fingerprint of the group `prefix` names (a fingerprint or a unique prefix of
    /// it), without reading the group's members: what a change to a group or a facet needs.
    public func groupFingerprint(prefix: String) throws -> String? {
        try read { db in try GroupRows.fingerprint(db, prefix: prefix) }
    }

    /// One group by fingerprint or unique prefix, with its latest report ids (newest first).
    public func group(fingerprint prefix: String, latest: Int = 10) throws -> GroupDetail? {
        try read { db in
            guard let fingerprint = try GroupRows.fingerprint(db, prefix: prefix),
                let row = try db.row(
                    """
                    SELECT \(GroupRows.columns), g.count AS n, g.first_seen AS first, g.last_seen AS last, g.users AS u, g.sessions AS se
                    FROM groups g WHERE g.fingerprint = ?
                    """,
                    fingerprint)
            else { return nil }
            let summary = try GroupRows.summary(db, row)
            let ids = try db.rows(
                "SELECT report_id FROM results WHERE fingerprint = ? ORDER BY received_at DESC, report_id DESC LIMIT ?",
                summary.fingerprint, latest
            ).map { try $0.int64(0) }
            let impact = try db.rows(
                "SELECT version, count, users, sessions FROM group_versions WHERE fingerprint = ?", summary.fingerprint
            ).map { VersionImpact(version: try $0.string(0), reports: try $0.int(1), users: try $0.int(2), sessions: try $0.int(3)) }
                .sorted { a, b in
                    if a.version.isEmpty != b.version.isEmpty { return b.version.isEmpty }
                    return VersionOrder.compare(a.version, b.version) > 0
                }
            let merged = try db.rows(
                "SELECT fingerprint FROM group_merges WHERE into_fingerprint = ? ORDER BY merged_at, fingerprint", summary.fingerprint
            ).map { try $0.string(0) }
            return GroupDetail(summary: summary, latestReportIds: ids, byVersion: impact, mergedGroups: merged)
        }
    }

    /// Build ids that processed reports lacked or could not use, most-needed first, without
    /// those `fixed` says the store has repaired since (it sees each summary, whose status and
    /// detail are those of the latest processing).
    public func missingSymbols(excluding fixed: (MissingSymbolSummary) -> Bool = { _ in false }) throws -> [MissingSymbolSummary] {
        try read { db in
            // The status of the latest processing per build id (rows of one id may differ: a
            // file stored as unreadable and removed since is not found in later reports).
            var latest: [String: (status: String, detail: String?)] = [:]
            for row in try db.rows(
                """
                SELECT m.build_id, m.status, m.detail FROM missing_symbols m
                JOIN results s ON s.report_id = m.report_id ORDER BY s.completed_at, m.report_id
                """)
            {
                latest[try row.string(0)] = (try row.string(1), try row.optionalString(2))
            }
            return try db.rows(
                """
                SELECT m.build_id, MAX(m.image_name) AS image_name, COUNT(DISTINCT m.report_id) AS n,
                       COUNT(DISTINCT s.fingerprint) AS "groups", MAX(r.received_at) AS last,
                       MAX(s.completed_at) AS processed
                FROM missing_symbols m JOIN reports r ON r.id = m.report_id
                LEFT JOIN results s ON s.report_id = m.report_id
                GROUP BY m.build_id ORDER BY n DESC, last DESC, m.build_id
                """
            ).compactMap { row in
                let hex = try row.string(0)
                let id = try row.storedBuildID(0, "build_id")
                let state = latest[hex]
                let last = Date(milliseconds: try row.int64(4))
                let summary = MissingSymbolSummary(
                    file: MissingDebugFile(
                        buildID: id, imageName: try row.optionalString(1),
                        status: state.flatMap { SymbolStatus(rawValue: $0.status) } ?? .notFound, detail: state?.detail),
                    reportCount: try row.int(2), groupCount: try row.int(3), lastSeen: last,
                    lastProcessed: try row.optionalInt64(5).map(Date.init(milliseconds:)) ?? last)
                return fixed(summary) ? nil : summary
            }
        }
    }
}

/// How a group row becomes a `GroupSummary`: the group's own columns (`columns`, over `groups
/// g`) followed by the counts the query chose, named `n`, `first`, `last`, `u` and `se`.
enum GroupRows {
    static let columns = "g.fingerprint, g.kind, g.title, g.rules_version, g.app, g.representative_report_id, g.frames"

    static func summary(_ db: SQLExecutor, _ row: SQLRow) throws -> GroupSummary {
        let fingerprint = try row.string(0)
        var versions: [String: Int] = [:]
        for v in try db.rows("SELECT version, count FROM group_versions WHERE fingerprint = ?", fingerprint) {
            versions[try v.string(0)] = try v.int(1)
        }
        let framesJSON = try row.string(6)
        return GroupSummary(
            fingerprint: fingerprint, kind: try row.stored(1, "kind"), title: try row.string(2), count: try row.int("n"),
            firstSeen: Date(milliseconds: try row.int64("first")), lastSeen: Date(milliseconds: try row.int64("last")),
            versions: versions, rulesVersion: try row.int(3), app: try row.optionalString(4),
            representativeReportId: try row.optionalInt64(5),
            frames: (try? JSONDecoder().decode([String].self, from: Data(framesJSON.utf8))) ?? [],
            users: try row.int("u"), sessions: try row.int("se"), triage: try TriageRows.triage(db, fingerprint))
    }

    static func fingerprint(_ db: SQLExecutor, prefix: String) throws -> String? {
        let escaped = prefix.lowercased().filter(\.isHexDigit)
        guard !escaped.isEmpty else { return nil }
        let matches = try db.rows("SELECT fingerprint FROM groups WHERE fingerprint LIKE ? LIMIT 6", escaped + "%").map { try $0.string(0) }
        if matches.count > 1 { throw GroupQueryError.ambiguousFingerprint(prefix, matches) }
        return matches.first
    }
}

extension Date {
    /// A time stored as integer milliseconds since the Unix epoch, as every table stores times.
    public init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }

    /// This time as stored: integer milliseconds since the Unix epoch (clamped: a date from
    /// a request may be any Double).
    public var milliseconds: Int64 { Int64.clamping(timeIntervalSince1970 * 1000) }
}
