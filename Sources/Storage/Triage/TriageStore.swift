import Foundation
import JSONFormat
import ReportModel
import SQLInterface

/// What people do to groups: set their state, assign, comment, merge and unmerge. Every change
/// is one IMMEDIATE transaction that also writes its history entry; fingerprints here are
/// whole (the callers resolve prefixes with `group(fingerprint:)`).
extension SQLStore {
    /// The group's triage (open with no row), or nil when no such group exists.
    public func triage(fingerprint: String) throws -> GroupTriage? {
        try read { db in
            guard try TriageRows.groupExists(db, fingerprint) else { return nil }
            return try TriageRows.triage(db, fingerprint)
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
        return try write { db in
            guard let group = try db.row("SELECT app FROM groups WHERE fingerprint = ?", fingerprint) else {
                throw TriageError.noGroup(fingerprint)
            }
            let now = now()
            var detail: [String: String] = [:]
            let action: String
            try TriageRows.ensureStateRow(db, fingerprint, now: now)
            switch change {
            case .resolve(let resolution, let asked):
                let version: String?
                switch resolution {
                case .version:
                    guard let asked else { throw TriageError.invalid(field: "version", "resolving in a version needs the version") }
                    version = try TriageText.checked(asked, field: "version", maxBytes: TriageText.maxVersionBytes)
                case .now:
                    version = try TriageRows.newest(
                        try db.rows("SELECT version FROM group_versions WHERE fingerprint = ? AND version != ''", fingerprint)
                            .map { try $0.string(0) })
                case .nextVersion:
                    let app = try group.optionalString(0)
                    version = try TriageRows.newest(
                        try db.rows(
                            """
                            SELECT DISTINCT gv.version FROM group_versions gv JOIN groups g ON g.fingerprint = gv.fingerprint
                            WHERE g.app IS NOT DISTINCT FROM ? AND gv.version != ''
                            UNION SELECT DISTINCT version FROM session_counters WHERE app IS NOT DISTINCT FROM ? AND version != ''
                            """,
                            app, app
                        ).map { try $0.string(0) })
                }
                try db.execute("""
                        UPDATE group_states SET state = 'resolved', resolution = ?, resolved_version = ?, ignore_until = NULL,
                            ignore_reports = NULL, ignore_users = NULL, ignore_reports_seen = 0, changed_at = ?
                        WHERE fingerprint = ?
                        """, resolution.rawValue, version, now, fingerprint)
                action = "resolved"
                detail["resolution"] = resolution.rawValue
                if let version { detail["version"] = version }
            case .ignore(let until, let reports, let users):
                if let until, until <= now { throw TriageError.invalid(field: "until", "must be in the future") }
                for (name, n) in [("reports", reports), ("users", users)] {
                    if let n, !(1...1_000_000_000).contains(n) { throw TriageError.invalid(field: name, "must be 1 to 1000000000") }
                }
                try db.execute("""
                        UPDATE group_states SET state = 'ignored', resolution = NULL, resolved_version = NULL, ignore_until = ?,
                            ignore_reports = ?, ignore_users = ?, ignore_reports_seen = 0, changed_at = ?
                        WHERE fingerprint = ?
                        """, until, reports, users, now, fingerprint)
                action = "ignored"
                if let until { detail["until"] = String(until) }
                if let reports { detail["reports"] = String(reports) }
                if let users { detail["users"] = String(users) }
            case .reopen:
                try db.execute("""
                        UPDATE group_states SET state = 'open', resolution = NULL, resolved_version = NULL, ignore_until = NULL,
                            ignore_reports = NULL, ignore_users = NULL, ignore_reports_seen = 0, changed_at = ?
                        WHERE fingerprint = ?
                        """, now, fingerprint)
                action = "reopened"
            }
            try GroupHistory.record(db, fingerprint: fingerprint, at: now, actor: actor, action: action, detail: detail, note: note)
            return try TriageRows.triage(db, fingerprint)
        }
    }

    /// Assigns the group to `assignee` (free text), or to nobody.
    @discardableResult
    public func assignGroup(fingerprint: String, to assignee: String?, actor: String, note: String? = nil) throws -> GroupTriage {
        let actor = try TriageText.checked(actor, field: "actor", maxBytes: TriageText.maxActorBytes)
        let assignee = try assignee.map { try TriageText.checked($0, field: "assignee", maxBytes: TriageText.maxAssigneeBytes) }
        let note = try note.map { try TriageText.checked($0, field: "note", maxBytes: TriageText.maxNoteBytes, multiline: true) }
        return try write { db in
            guard try TriageRows.groupExists(db, fingerprint) else { throw TriageError.noGroup(fingerprint) }
            let now = now()
            try TriageRows.ensureStateRow(db, fingerprint, now: now)
            try db.execute("UPDATE group_states SET assignee = ? WHERE fingerprint = ?", assignee, fingerprint)
            try GroupHistory.record(
                db, fingerprint: fingerprint, at: now, actor: actor, action: assignee == nil ? "unassigned" : "assigned",
                detail: assignee.map { ["assignee": $0] } ?? [:], note: note)
            return try TriageRows.triage(db, fingerprint)
        }
    }

    /// Adds a comment to the group's history.
    @discardableResult
    public func commentOnGroup(fingerprint: String, text: String, actor: String) throws -> GroupHistoryEntry {
        let actor = try TriageText.checked(actor, field: "actor", maxBytes: TriageText.maxActorBytes)
        let text = try TriageText.checked(text, field: "comment", maxBytes: TriageText.maxCommentBytes, multiline: true)
        return try write { db in
            guard try TriageRows.groupExists(db, fingerprint) else { throw TriageError.noGroup(fingerprint) }
            let id = try GroupHistory.record(db, fingerprint: fingerprint, at: now(), actor: actor, action: "commented", note: text)
            guard let row = try db.row("SELECT \(GroupHistory.columns) FROM group_history WHERE id = ?", id)
            else { throw TriageError.noGroup(fingerprint) }
            return try GroupHistory.entry(row)
        }
    }

    /// The group's history, newest first.
    public func groupHistory(fingerprint: String, limit: Int = 100) throws -> [GroupHistoryEntry] {
        try read { db in
            try db.rows(
                "SELECT \(GroupHistory.columns) FROM group_history WHERE fingerprint = ? ORDER BY id DESC LIMIT ?", fingerprint, limit
            ).map(GroupHistory.entry)
        }
    }

    /// Merges group `source` into `target`: its reports are counted under `target` from this
    /// transaction on, and so are its future reports (docs/triage.md, "Merging").
    public func mergeGroup(_ source: String, into target: String, actor: String, note: String? = nil) throws {
        let actor = try TriageText.checked(actor, field: "actor", maxBytes: TriageText.maxActorBytes)
        let note = try note.map { try TriageText.checked($0, field: "note", maxBytes: TriageText.maxNoteBytes, multiline: true) }
        guard source != target else { throw TriageError.mergeIntoItself }
        try write { db in
            // Both rows locked: a completion filing into either waits for the merge (PostgreSQL).
            guard let from = try db.row(
                "SELECT kind, title, rules_version, frames, app FROM groups WHERE fingerprint = ?\(db.dialect.forUpdate)", source)
            else {
                throw TriageError.noGroup(source)
            }
            guard let into = try db.row("SELECT kind FROM groups WHERE fingerprint = ?\(db.dialect.forUpdate)", target) else {
                throw TriageError.noGroup(target)
            }
            let (fromKind, intoKind) = (try from.string(0), try into.string(0))
            guard fromKind == intoKind else { throw TriageError.kindsDiffer(fromKind, intoKind) }
            let now = now()
            let frames = try from.optionalString(3).flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) } ?? []
            let key = GroupKey(
                fingerprint: source, kind: try from.stored(0, "kind"), title: try from.string(1), rulesVersion: try from.int(2),
                frames: frames)
            try GroupMerges.insert(db, key: key, app: try from.optionalString(4), into: target, at: now, by: actor)
            // Groups merged into the source before now go where it goes.
            try db.execute("UPDATE group_merges SET into_fingerprint = ? WHERE into_fingerprint = ?", target, source)
            try db.execute("UPDATE results SET own_fingerprint = COALESCE(own_fingerprint, fingerprint), fingerprint = ? WHERE fingerprint = ?", target, source)
            try GroupCounts.recount(db, source)
            try GroupCounts.recount(db, target)
            try GroupHistory.record(db, fingerprint: target, at: now, actor: actor, action: "merged", detail: ["fingerprint": source], note: note)
            try GroupHistory.record(db, fingerprint: source, at: now, actor: actor, action: "merged-into", detail: ["into": target], note: note)
        }
    }

    /// Gives a merged group back its reports (those whose own fingerprint it is) and its future ones.
    public func unmergeGroup(_ source: String, actor: String, note: String? = nil) throws {
        let actor = try TriageText.checked(actor, field: "actor", maxBytes: TriageText.maxActorBytes)
        let note = try note.map { try TriageText.checked($0, field: "note", maxBytes: TriageText.maxNoteBytes, multiline: true) }
        try write { db in
            guard let merge = try db.row(
                "SELECT into_fingerprint, kind, title, rules_version, frames, app FROM group_merges WHERE fingerprint = ?", source)
            else {
                throw TriageError.notMerged(source)
            }
            let target = try merge.string(0)
            let now = now()
            try db.execute("DELETE FROM group_merges WHERE fingerprint = ?", source)
            try db.execute("UPDATE results SET fingerprint = own_fingerprint, own_fingerprint = NULL WHERE fingerprint = ? AND own_fingerprint = ?", target, source)
            // The row comes back as the merge kept it; the recount gives it its members' numbers.
            try db.execute(
                """
                INSERT INTO groups (fingerprint, kind, title, rules_version, frames, app, count, first_seen, last_seen)
                VALUES (?, ?, ?, ?, ?, ?, 0, 0, 0) ON CONFLICT DO NOTHING
                """,
                [.text(source)] + Array(merge.values[1...5]))
            try GroupCounts.recount(db, source)
            try GroupCounts.recount(db, target)
            try GroupHistory.record(db, fingerprint: target, at: now, actor: actor, action: "unmerged", detail: ["fingerprint": source], note: note)
            try GroupHistory.record(db, fingerprint: source, at: now, actor: actor, action: "unmerged-from", detail: ["from": target], note: note)
        }
    }

    /// The group a merged fingerprint now lives in, if it was merged.
    public func mergeTarget(of fingerprint: String) throws -> String? {
        try read { db in try db.string("SELECT into_fingerprint FROM group_merges WHERE fingerprint = ?", fingerprint) }
    }

}

/// The triage rows' reads and writes shared by the changes above.
enum TriageRows {
    static func groupExists(_ db: SQLExecutor, _ fingerprint: String) throws -> Bool {
        try db.bool("SELECT EXISTS (SELECT 1 FROM groups WHERE fingerprint = ?)", fingerprint)
    }

    static func triage(_ db: SQLExecutor, _ fingerprint: String) throws -> GroupTriage {
        try db.row("SELECT \(GroupTriage.columns) FROM group_states WHERE fingerprint = ?", fingerprint).map(GroupTriage.init) ?? .open
    }

    static func ensureStateRow(_ db: SQLExecutor, _ fingerprint: String, now: Int64) throws {
        try db.execute(
            "INSERT INTO group_states (fingerprint, state, changed_at) VALUES (?, 'open', ?) ON CONFLICT DO NOTHING", fingerprint, now)
    }

    /// The newest of `versions` in version order; nil when there are none.
    static func newest(_ versions: [String]) throws -> String? {
        versions.max { VersionOrder.less($0, $1) }
    }
}
