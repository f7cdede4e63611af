import Storage
import ReportModel
import SymbolStore

/// `symbols missing` and `GET /api/v1/symbols/missing`: build ids processed reports needed and
/// could not use, each with the last answer of every symbol source about it. A file added since
/// the report was processed no longer counts: for an id not found, any file; for one whose
/// stored file was unusable (unreadable, another architecture) or had no line tables, a file
/// stored after the reports were last processed.
public func missingDebugFiles(db: any SQLStore, store: SymbolStoreDirectory) throws -> [MissingSymbolSummary] {
    var missing = try db.missingSymbols { summary in
        guard let entry = store.entry(buildID: summary.file.buildID) else { return false }
        return summary.file.status == .notFound || entry.addedAt > summary.lastProcessed
    }
    let answers = try db.sourceAnswers(buildIds: missing.map(\.file.buildID))
    for i in missing.indices { missing[i].sources = answers[missing[i].file.buildID] ?? [] }
    return missing
}
