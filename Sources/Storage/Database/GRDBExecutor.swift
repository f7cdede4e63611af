import Foundation
import GRDB
import SQLInterface

/// The SQLite backend's `SQLExecutor`: GRDB's connection inside the transaction it was handed
/// in. Every statement goes through GRDB's statement cache, since store code runs a fixed set
/// of texts and compiling them again per job was about half of a completion's CPU
/// (scripts/bench-queue-store.sh).
final class GRDBExecutor: SQLExecutor {
    let db: Database

    init(_ db: Database) { self.db = db }

    var dialect: SQLDialect { .sqlite }

    @discardableResult
    func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int {
        try db.cachedStatement(sql: sql).execute(arguments: Self.arguments(arguments))
        return db.changesCount
    }

    func rows(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow] {
        let statement = try db.cachedStatement(sql: sql)
        let cursor = try Row.fetchCursor(statement, arguments: Self.arguments(arguments))
        var rows: [SQLRow] = []
        while let row = try cursor.next() {
            rows.append(SQLRow(row.databaseValues.map(Self.value)))
        }
        return rows
    }

    static func arguments(_ values: [SQLValue]) -> StatementArguments {
        StatementArguments(values.map { value -> DatabaseValue in
            switch value {
            case .null: .null
            case .integer(let v): v.databaseValue
            case .real(let v): v.databaseValue
            case .text(let v): v.databaseValue
            case .blob(let v): v.databaseValue
            }
        })
    }

    static func value(_ value: DatabaseValue) -> SQLValue {
        switch value.storage {
        case .null: .null
        case .int64(let v): .integer(v)
        case .double(let v): .real(v)
        case .string(let v): .text(v)
        case .blob(let v): .blob(v)
        }
    }
}
