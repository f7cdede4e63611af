import Foundation
import GRDB
import JSONFormat
import ReportModel

/// What people do to groups: set their state, assign, comment, merge and unmerge. Every change
/// is one IMMEDIATE transaction that also writes its history entry; fingerprints here are
/// whole (the callers resolve prefixes with `group(fingerprint:)`).
extension ServiceDatabase {
    /// The group's triage (open with no row), or nil when no such group exists.
    public func triage(fingerprint: String) throws -> GroupTriage? {
        try pool.read { db in
            guard try Self.groupExists(db, fingerprint) else { return nil }
            return try Self.triage(db, fingerprint)
        }
    }

    /// Sets a group's state. Resolving without a version resolves it in the newest version the
    /// group was seen in; `nextVersion` in the newest version its app was seen in (crashes and
    /// launches alike), so only a later one reopens it.
    @discardableResult
    public func changeGroupState(
        fingerprint: String, _ change: GroupStateChange, actor: String, note: String? = nil
    ) throws -> GroupTriage {
        let actor = try TriageText.checked(actor, field: "actor", maxBytes: TriageText.maxActorBytes)
        let note = try note.map { try TriageText.checked($0, field: "note", maxBytes: TriageText.maxNoteBytes, multiline: true) }
        return try immediate { db in
            guard let group = try Row.fetchOne(db, sql: "SELECT app FROM groups WHERE fingerprint = ?", arguments: [fingerprint]) else {
                throw TriageError.noGroup(fingerprint)
            }
            let now = clock()
            var detail: [String: String] = [:]
            let action: String
            try Self.ensureStateRow(db, fingerprint, now: now)
            switch change {
            case .resolve(let resolution, let asked):
                let version: String?
                switch resolution {
                case .version:
                    guard let asked else { throw TriageError.invalid(field: "version", "resolving in a version needs the version") }
                    version = try TriageText.checked(asked, field: "version", maxBytes: TriageText.maxVersionBytes)
                case .now:
                    version = try Self.newest(try String.fetchAll(
                        db, sql: "SELECT version FROM group_versions WHERE fingerprint = ? AND version != ''", arguments: [fingerprint]))
                case .nextVersion:
                    let app: String? = group["app"]
                    version = try Self.newest(try String.fetchAll(
                        db,
                        sql: """
                            SELECT DISTINCT gv.version FROM group_versions gv JOIN groups g ON g.fingerprint = gv.fingerprint
                            WHERE g.app IS ? AND gv.version != ''
                            UNION SELECT DISTINCT version FROM session_counters WHERE app IS ? AND version != ''
                            """,
                        arguments: [app, app]))
                }
                try db.execute(
                    sql: """
                        UPDATE group_states SET state = 'resolved', resolution = ?, resolved_version = ?, ignore_until = NULL,
                            ignore_reports = NULL, ignore_users = NULL, ignore_reports_seen = 0, changed_at = ?
                        WHERE fingerprint = ?
                        """,
                    arguments: [resolution.rawValue, version, now, fingerprint])
                action = "resolved"
                detail["resolution"] = resolution.rawValue
                if let version { detail["version"] = version }
            case .ignore(let until, let reports, let users):
                if let until, until <= now { throw TriageError.invalid(field: "until", "must be in the future") }
                for (name, n) in [("reports", reports), ("users", users)] {
                    if let n, !(1...1_000_000_000).contains(n) { throw TriageError.invalid(field: name, "must be 1 to 1000000000") }
                }
                try db.execute(
                    sql: """
                        UPDATE group_states SET state = 'ignored', resolution = NULL, resolved_version = NULL, ignore_until = ?,
                            ignore_reports = ?, ignore_users = ?, ignore_reports_seen = 0, changed_at = ?
                        WHERE fingerprint = ?
                        """,
                    arguments: [until, reports, users, now, fingerprint])
                action = "ignored"
                if let until { detail["until"] = String(until) }
                if let reports { detail["reports"] = String(reports) }
                if let users { detail["users"] = String(users) }
            case .reopen:
                try db.execute(
                    sql: """
                        UPDATE group_states SET state = 'open', resolution = NULL, resolved_version = NULL, ignore_until = NULL,
                            ignore_reports = NULL, ignore_users = NULL, ignore_reports_seen = 0, changed_at = ?
                        WHERE fingerprint = ?
                        """,
                    arguments: [now, fingerprint])
                action = "reopened"
            }
            try GroupHistory.record(GRDBExecutor(db), fingerprint: fingerprint, at: now, actor: actor, action: action, detail: detail, note: note)
            return try Self.triage(db, fingerprint)
        }
    }

    /// Assigns the group to `assignee` (free text), or to nobody.
    @discardableResult
    public func assignGroup(fingerprint: String, to assignee: String?, actor: String, note: String? = nil) throws -> GroupTriage {
        let actor = try TriageText.checked(actor, field: "actor", maxBytes: TriageText.maxActorBytes)
        let assignee = try assignee.map { try TriageText.checked($0, field: "assignee", maxBytes: TriageText.maxAssigneeBytes) }
        let note = try note.map { try TriageText.checked($0, field: "note", maxBytes: TriageText.maxNoteBytes, multiline: true) }
        return try immediate { db in
            guard try Self.groupExists(db, fingerprint) else { throw TriageError.noGroup(fingerprint) }
            let now = clock()
            try Self.ensureStateRow(db, fingerprint, now: now)
            try db.execute(sql: "UPDATE group_states SET assignee = ? WHERE fingerprint = ?", arguments: [assignee, fingerprint])
            try GroupHistory.record(
                GRDBExecutor(db), fingerprint: fingerprint, at: now, actor: actor, action: assignee == nil ? "unassigned" : "assigned",
                detail: assignee.map { ["assignee": $0] } ?? [:], note: note)
            return try Self.triage(db, fingerprint)
        }
    }

    /// Adds a comment to the group's history.
    @discardableResult
    public func commentOnGroup(fingerprint: String, text: String, actor: String) throws -> GroupHistoryEntry {
        let actor = try TriageText.checked(actor, field: "actor", maxBytes: TriageText.maxActorBytes)
        let text = try TriageText.checked(text, field: "comment", maxBytes: TriageText.maxCommentBytes, multiline: true)
        return try immediate { db in
            guard try Self.groupExists(db, fingerprint) else { throw TriageError.noGroup(fingerprint) }
            try GroupHistory.record(GRDBExecutor(db), fingerprint: fingerprint, at: clock(), actor: actor, action: "commented", note: text)
            let row = try Row.fetchOne(db, sql: "SELECT * FROM group_history WHERE id = ?", arguments: [db.lastInsertedRowID])
            return GroupHistory.entry(row!)
        }
    }

    /// The group's history, newest first.
    public func groupHistory(fingerprint: String, limit: Int = 100) throws -> [GroupHistoryEntry] {
        try pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM group_history WHERE fingerprint = ? ORDER BY id DESC LIMIT ?", arguments: [fingerprint, limit]
            ).map(GroupHistory.entry)
        }
    }

    /// Merges group `source` into `target`: its reports are counted under `target` from this
    /// transaction on, and so are its future reports (docs/triage.md, "Merging").
    public func mergeGroup(_ source: String, into target: String, actor: String, note: String? = nil) throws {
        let actor = try TriageText.checked(actor, field: "actor", maxBytes: TriageText.maxActorBytes)
        let note = try note.map { try TriageText.checked($0, field: "note", maxBytes: TriageText.maxNoteBytes, multiline: true) }
        guard source != target else { throw TriageError.mergeIntoItself }
        try immediate { db in
            guard let from = try Row.fetchOne(db, sql: "SELECT * FROM groups WHERE fingerprint = ?", arguments: [source]) else {
                throw TriageError.noGroup(source)
            }
            guard let into = try Row.fetchOne(db, sql: "SELECT kind FROM groups WHERE fingerprint = ?", arguments: [target]) else {
                throw TriageError.noGroup(target)
            }
            let (fromKind, intoKind): (String, String) = (from["kind"], into["kind"])
            guard fromKind == intoKind else { throw TriageError.kindsDiffer(fromKind, intoKind) }
            let now = clock()
            let frames = (from["frames"] as String?).flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) } ?? []
            let key = GroupKey(
                fingerprint: source, kind: try from.stored("kind"), title: from["title"], rulesVersion: from["rules_version"],
                frames: frames)
            try GroupMerges.insert(GRDBExecutor(db), key: key, app: from["app"], into: target, at: now, by: actor)
            // Groups merged into the source before now go where it goes.
            try db.execute(sql: "UPDATE group_merges SET into_fingerprint = ? WHERE into_fingerprint = ?", arguments: [target, source])
            try db.execute(
                sql: "UPDATE results SET own_fingerprint = COALESCE(own_fingerprint, fingerprint), fingerprint = ? WHERE fingerprint = ?",
                arguments: [target, source])
            try GroupCounts.recount(GRDBExecutor(db), source)
            try GroupCounts.recount(GRDBExecutor(db), target)
            try GroupHistory.record(GRDBExecutor(db), fingerprint: target, at: now, actor: actor, action: "merged", detail: ["fingerprint": source], note: note)
            try GroupHistory.record(GRDBExecutor(db), fingerprint: source, at: now, actor: actor, action: "merged-into", detail: ["into": target], note: note)
        }
    }

    /// Gives a merged group back its reports (those whose own fingerprint it is) and its future ones.
    public func unmergeGroup(_ source: String, actor: String, note: String? = nil) throws {
        let actor = try TriageText.checked(actor, field: "actor", maxBytes: TriageText.maxActorBytes)
        let note = try note.map { try TriageText.checked($0, field: "note", maxBytes: TriageText.maxNoteBytes, multiline: true) }
        try immediate { db in
            guard let merge = try Row.fetchOne(db, sql: "SELECT * FROM group_merges WHERE fingerprint = ?", arguments: [source]) else {
                throw TriageError.notMerged(source)
            }
            let target: String = merge["into_fingerprint"]
            let now = clock()
            try db.execute(sql: "DELETE FROM group_merges WHERE fingerprint = ?", arguments: [source])
            try db.execute(
                sql: "UPDATE results SET fingerprint = own_fingerprint, own_fingerprint = NULL WHERE fingerprint = ? AND own_fingerprint = ?",
                arguments: [target, source])
            // The row comes back as the merge kept it; the recount gives it its members' numbers.
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO groups (fingerprint, kind, title, rules_version, frames, app, count, first_seen, last_seen)
                    VALUES (?, ?, ?, ?, ?, ?, 0, 0, 0)
                    """,
                arguments: [source, merge["kind"], merge["title"], merge["rules_version"], merge["frames"], merge["app"]])
            try GroupCounts.recount(GRDBExecutor(db), source)
            try GroupCounts.recount(GRDBExecutor(db), target)
            try GroupHistory.record(GRDBExecutor(db), fingerprint: target, at: now, actor: actor, action: "unmerged", detail: ["fingerprint": source], note: note)
            try GroupHistory.record(GRDBExecutor(db), fingerprint: source, at: now, actor: actor, action: "unmerged-from", detail: ["from": target], note: note)
        }
    }

    /// The group a merged fingerprint now lives in, if it was merged.
    public func mergeTarget(of fingerprint: String) throws -> String? {
        try pool.read { db in
            try String.fetchOne(db, sql: "SELECT into_fingerprint FROM group_merges WHERE fingerprint = ?", arguments: [fingerprint])
        }
    }

    static func groupExists(_ db: Database, _ fingerprint: String) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM groups WHERE fingerprint = ?)", arguments: [fingerprint]) ?? false
    }

    static func triage(_ db: Database, _ fingerprint: String) throws -> GroupTriage {
        try GRDBExecutor(db).row("SELECT \(GroupTriage.columns) FROM group_states WHERE fingerprint = ?", fingerprint)
            .map(GroupTriage.init) ?? .open
    }

    private static func ensureStateRow(_ db: Database, _ fingerprint: String, now: Int64) throws {
        try db.execute(
            sql: "INSERT OR IGNORE INTO group_states (fingerprint, state, changed_at) VALUES (?, 'open', ?)", arguments: [fingerprint, now])
    }

    /// The newest of `versions` in version order; nil when there are none.
    private static func newest(_ versions: [String]) throws -> String? {
        versions.max { VersionOrder.less($0, $1) }
    }
}
