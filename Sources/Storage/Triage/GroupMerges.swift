import Foundation
import GRDB
import JSONFormat
import ReportModel
import SQLInterface

/// Groups merged by hand. A merged group's reports are filed under the group it was merged
/// into, now and whenever they or new reports of it are processed again; `results` keeps each
/// report's own fingerprint (`own_fingerprint`), so an unmerge can give them back.
///
/// A merge follows regrouping (new symbols, new grouping rules), which gives reports new
/// fingerprints: a merged-in report that comes back under a fingerprint nobody has yet brings
/// that fingerprint into the merge (`carry`), and when the target's own reports move to a new
/// fingerprint, the merge and its reports move with the first of them (`retarget`).
enum GroupMerges {
    /// Where a report with the worker's `key` is filed: `key` itself, or the group it is merged into.
    static func target(_ db: SQLExecutor, of key: GroupKey) throws -> (key: GroupKey, own: String?) {
        guard let into = try db.string("SELECT into_fingerprint FROM group_merges WHERE fingerprint = ?", key.fingerprint)
        else { return (key, nil) }
        // Filed under the target's row as it stands: its title and frames are the target's.
        let row = try db.row("SELECT title, rules_version, frames FROM groups WHERE fingerprint = ?", into)
        let frames = try row?.optionalString(2).flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) }
        return (
            GroupKey(
                fingerprint: into, kind: key.kind, title: try row?.optionalString(0) ?? key.title,
                rulesVersion: try row?.optionalInt(1) ?? key.rulesVersion, frames: frames ?? key.frames),
            key.fingerprint
        )
    }

    /// A report filed under `previousGroup` by a merge (its own fingerprint was `previousOwn`)
    /// now has the fingerprint `key`: if no group and no merge knows `key` yet, it joins the merge.
    static func carry(
        _ db: SQLExecutor, previousOwn: String, previousGroup: String, to key: GroupKey, app: String?, now: Int64
    ) throws {
        guard key.fingerprint != previousOwn, key.fingerprint != previousGroup else { return }
        let into = try db.string("SELECT into_fingerprint FROM group_merges WHERE fingerprint = ?", previousOwn) ?? previousGroup
        guard key.fingerprint != into,
            try !db.bool(
                """
                SELECT 1 WHERE EXISTS (SELECT 1 FROM groups WHERE fingerprint = ?) OR EXISTS (SELECT 1 FROM group_merges WHERE fingerprint = ?)
                """,
                key.fingerprint, key.fingerprint)
        else { return }
        try insert(db, key: key, app: app, into: into, at: now, by: GroupHistoryEntry.automatic)
        try GroupHistory.record(
            db, fingerprint: into, at: now, actor: GroupHistoryEntry.automatic, action: "merge-followed",
            detail: ["fingerprint": key.fingerprint, "from": previousOwn])
    }

    /// A report of group `previous`'s own moved to `new`: if `previous` has groups merged into
    /// it and `new` is nobody's merge, the merges and their reports follow it to `new`. The
    /// pending joins go in first, so `new`'s row exists and the recounts see every member.
    static func retarget(
        _ db: SQLExecutor, from previous: String, to new: String, now: Int64, joins: inout GroupLedger.PendingJoins
    ) throws {
        guard previous != new,
            try db.bool("SELECT 1 FROM group_merges WHERE into_fingerprint = ? LIMIT 1", previous),
            try !db.bool("SELECT 1 FROM group_merges WHERE fingerprint = ?", new)
        else { return }
        try joins.apply(db)
        try db.execute("UPDATE group_merges SET into_fingerprint = ? WHERE into_fingerprint = ?", new, previous)
        try db.execute("UPDATE results SET fingerprint = ? WHERE fingerprint = ? AND own_fingerprint IS NOT NULL", new, previous)
        try db.execute("UPDATE results SET own_fingerprint = NULL WHERE fingerprint = ? AND own_fingerprint = ?", new, new)
        try GroupCounts.recount(db, previous)
        try GroupCounts.recount(db, new)
        try GroupHistory.record(
            db, fingerprint: new, at: now, actor: GroupHistoryEntry.automatic, action: "merge-followed", detail: ["from": previous])
    }

    static func insert(_ db: SQLExecutor, key: GroupKey, app: String?, into: String, at now: Int64, by actor: String) throws {
        let frames = String(decoding: try JSONStyle.compact.encode(key.frames), as: UTF8.self)
        try db.execute(
            """
            INSERT INTO group_merges (fingerprint, into_fingerprint, kind, title, rules_version, frames, app, merged_at, merged_by)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (fingerprint) DO UPDATE SET into_fingerprint = excluded.into_fingerprint
            """,
            key.fingerprint, into, key.kind.rawValue, key.title, key.rulesVersion, frames, app, now, actor)
    }
}

/// Recomputing a group's counts from its members: what a merge or an unmerge does, since it
/// moves a whole group's reports at once. Exact by construction, like the ledger.
enum GroupCounts {
    /// Rewrites `fingerprint`'s count, first and last seen, representative, per-version counts
    /// and `GroupCounters` from the results filed under it; deletes the row when none are.
    static func recount(_ db: SQLExecutor, _ fingerprint: String) throws {
        try db.execute("DELETE FROM group_versions WHERE fingerprint = ?", fingerprint)
        try db.execute(
            """
            INSERT INTO group_versions (fingerprint, version, count)
            SELECT s.fingerprint, COALESCE(r.version, ''), COUNT(*) FROM results s JOIN reports r ON r.id = s.report_id
            WHERE s.fingerprint = ? GROUP BY s.fingerprint, COALESCE(r.version, '')
            """,
            fingerprint)
        try db.execute(
            "UPDATE groups SET count = (SELECT COUNT(*) FROM results WHERE fingerprint = groups.fingerprint) WHERE fingerprint = ?",
            fingerprint)
        try db.execute("DELETE FROM groups WHERE fingerprint = ? AND count <= 0", fingerprint)
        try GroupLedger.refreshFromMembers(db, fingerprint)
        try GroupCounters.rebuild(db, fingerprint: fingerprint)
    }
}
