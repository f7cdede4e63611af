import Storage
import ReportModel
import SymbolStore

/// `symbols missing` and `GET /api/v1/symbols/missing`: build ids processed reports needed that
/// the store still lacks (a file added since the report was processed no longer counts).
public func missingDebugFiles(db: ServiceDatabase, store: SymbolStoreDirectory) throws -> [MissingSymbolSummary] {
    try db.missingSymbols { store.entry(buildID: $0) != nil }
}
