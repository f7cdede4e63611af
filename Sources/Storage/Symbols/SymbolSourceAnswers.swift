import Foundation
import SQLInterface
import ReportModel

/// The last answer of each upstream symbol source per build id (`symbol_source_answers`): what
/// the master's source fetcher writes each time it asks, and what the report page and
/// `symbols missing` show beside a debug file that is not found.
extension SQLStore {
    /// Replaces the stored answer of each (build id, source) pair with the one given.
    public func recordSourceAnswers(_ answers: [(buildID: BuildID, answer: SymbolSourceAnswer)]) throws {
        guard !answers.isEmpty else { return }
        try write { db in
            for (id, answer) in answers {
                try db.execute(
                    """
                    INSERT INTO symbol_source_answers (build_id, source, outcome, detail, answered_at)
                    VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (build_id, source) DO UPDATE SET
                        outcome = excluded.outcome, detail = excluded.detail, answered_at = excluded.answered_at
                    """,
                    id.hex, answer.source, answer.outcome.rawValue, answer.detail, Int64(answer.answeredAt.timeIntervalSince1970 * 1000))
            }
        }
    }

    /// The stored answers about each of `buildIds`, oldest first per id; ids no source was
    /// asked about are absent.
    public func sourceAnswers(buildIds: [BuildID]) throws -> [BuildID: [SymbolSourceAnswer]] {
        let ids = Array(Set(buildIds.map(\.hex))).sorted()
        guard !ids.isEmpty else { return [:] }
        return try read { db in
            var found: [BuildID: [SymbolSourceAnswer]] = [:]
            for chunk in ids.sqlChunks {
                let rows = try db.rows(
                    """
                    SELECT build_id, source, outcome, detail, answered_at FROM symbol_source_answers
                    WHERE build_id IN (\(sqlPlaceholders(chunk.count)))
                    ORDER BY build_id, answered_at, source
                    """,
                    chunk.map(\.sqlValue))
                for row in rows {
                    let id = try row.storedBuildID(0, "build_id")
                    let outcome = SymbolSourceAnswer.Outcome(rawValue: try row.string(2)) ?? .failed
                    found[id, default: []].append(
                        SymbolSourceAnswer(
                            source: try row.string(1), outcome: outcome, detail: try row.string(3),
                            answeredAt: Date(milliseconds: try row.int64(4))))
                }
            }
            return found
        }
    }

    /// Build ids that stored reports lack (`missing_symbols`), the most recently needed first.
    public func lackedBuildIds(limit: Int) throws -> [BuildID] {
        try read { db in
            try db.rows(
                """
                SELECT m.build_id FROM missing_symbols m JOIN reports r ON r.id = m.report_id
                GROUP BY m.build_id ORDER BY MAX(r.received_at) DESC LIMIT ?
                """,
                max(0, limit)
            ).compactMap { try? BuildID(try $0.string(0)) }
        }
    }

    /// Removes the answers about ids that no stored report lacks any more (their reports were
    /// pruned or reprocessed with the file). Returns how many rows went.
    @discardableResult
    public func pruneSourceAnswers() throws -> Int {
        try write { db in
            try db.execute("DELETE FROM symbol_source_answers WHERE build_id NOT IN (SELECT build_id FROM missing_symbols)")
        }
    }
}
