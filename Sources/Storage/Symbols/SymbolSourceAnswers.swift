import Foundation
import GRDB
import ReportModel

/// The last answer of each upstream symbol source per build id (`symbol_source_answers`): what
/// the master's source fetcher writes each time it asks, and what the report page and
/// `symbols missing` show beside a debug file that is not found.
extension ServiceDatabase {
    /// Replaces the stored answer of each (build id, source) pair with the one given.
    public func recordSourceAnswers(_ answers: [(buildID: BuildID, answer: SymbolSourceAnswer)]) throws {
        guard !answers.isEmpty else { return }
        try immediate { db in
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO symbol_source_answers (build_id, source, outcome, detail, answered_at)
                    VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (build_id, source) DO UPDATE SET
                        outcome = excluded.outcome, detail = excluded.detail, answered_at = excluded.answered_at
                    """)
            for (id, answer) in answers {
                try upsert.execute(arguments: [
                    id.hex, answer.source, answer.outcome.rawValue, answer.detail, Int64(answer.answeredAt.timeIntervalSince1970 * 1000),
                ])
            }
        }
    }

    /// The stored answers about each of `buildIds`, oldest first per id; ids no source was
    /// asked about are absent.
    public func sourceAnswers(buildIds: [BuildID]) throws -> [BuildID: [SymbolSourceAnswer]] {
        let ids = Array(Set(buildIds.map(\.hex))).sorted()
        guard !ids.isEmpty else { return [:] }
        return try pool.read { db in
            var found: [BuildID: [SymbolSourceAnswer]] = [:]
            // SQLite's default limit on bound parameters is 32,766; a report has far fewer images.
            for chunk in stride(from: 0, to: ids.count, by: 500).map({ ids[$0..<min($0 + 500, ids.count)] }) {
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT build_id, source, outcome, detail, answered_at FROM symbol_source_answers
                        WHERE build_id IN (\(databaseQuestionMarks(count: chunk.count)))
                        ORDER BY build_id, answered_at, source
                        """,
                    arguments: StatementArguments(Array(chunk)))
                for row in rows {
                    let id = try row.storedBuildID("build_id")
                    let outcome = SymbolSourceAnswer.Outcome(rawValue: row["outcome"]) ?? .failed
                    found[id, default: []].append(
                        SymbolSourceAnswer(
                            source: row["source"], outcome: outcome, detail: row["detail"],
                            answeredAt: Date(milliseconds: row["answered_at"])))
                }
            }
            return found
        }
    }

    /// Build ids that stored reports lack (`missing_symbols`), the most recently needed first.
    public func lackedBuildIds(limit: Int) throws -> [BuildID] {
        try pool.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT m.build_id FROM missing_symbols m JOIN reports r ON r.id = m.report_id
                    GROUP BY m.build_id ORDER BY MAX(r.received_at) DESC LIMIT ?
                    """,
                arguments: [max(0, limit)]
            ).compactMap { try? BuildID($0) }
        }
    }

    /// Removes the answers about ids that no stored report lacks any more (their reports were
    /// pruned or reprocessed with the file). Returns how many rows went.
    @discardableResult
    public func pruneSourceAnswers() throws -> Int {
        try immediate { db in
            try db.execute(
                sql: """
                    DELETE FROM symbol_source_answers
                    WHERE build_id NOT IN (SELECT build_id FROM missing_symbols)
                    """)
            return db.changesCount
        }
    }
}
