import Foundation

/// What one symbol source (an upstream debuginfod server, `serve --symbol-source`) last said
/// about one build id. The one record of it: the master writes it each time it asks
/// (`symbol_source_answers`), and the report page, `report --json`, the report API and
/// `symbols missing` show it beside an image whose debug file is not found.
/// Its JSON is `{"source": "…", "outcome": "notFound", "detail": "…", "answeredAt": "…"}`.
public struct SymbolSourceAnswer: Sendable, Hashable, Codable {
    public enum Outcome: String, Sendable, Hashable, Codable, CaseIterable {
        /// The source sent the file and it was stored.
        case found
        /// The source has no file for the id (404 for both debuginfo and executable).
        case notFound
        /// The source sent something that is not the file of this id (another build's, not a
        /// debug file, over the size limit): nothing of it was kept.
        case refused
        /// No usable answer: connection refused or timed out, another status (401, 5xx), or
        /// the source was skipped while it backs off after such an error.
        case failed
    }

    /// The source's name: its URL without credentials, as `serve --symbol-source` was given it.
    public var source: String
    public var outcome: Outcome
    /// One line saying what happened ("404 for debuginfo and executable", "timed out after 10 s").
    public var detail: String
    public var answeredAt: Date

    public init(source: String, outcome: Outcome, detail: String, answeredAt: Date) {
        self.source = source
        self.outcome = outcome
        self.detail = detail
        self.answeredAt = answeredAt
    }
}
