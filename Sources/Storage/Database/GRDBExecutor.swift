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
        var rows: [SQLRow] = []
        try scan(sql, arguments) { row in
            rows.append(row)
            return true
        }
        return rows
    }

    func insert(_ sql: String, _ arguments: [SQLValue]) throws -> Int64 {
        try db.cachedStatement(sql: sql).execute(arguments: Self.arguments(arguments))
        return db.lastInsertedRowID
    }

    func scan(_ sql: String, _ arguments: [SQLValue], _ body: (SQLRow) throws -> Bool) throws {
        let statement = try db.cachedStatement(sql: sql)
        let columns = statement.columnNames
        let cursor = try Row.fetchCursor(statement, arguments: Self.arguments(arguments))
        while let row = try cursor.next() {
            guard try body(SQLRow(row.databaseValues.map(Self.value), columns: columns)) else { return }
        }
    }

    /// Through GRDB's initializer of optional existentials, as its array literals go: its
    /// initializer of a sequence of one concrete type maps with a key path, which cost more than
    /// the statement itself on the submit path (callgrind of scripts/bench-queue-store.sh).
    static func arguments(_ values: [SQLValue]) -> StatementArguments {
        var converted: [(any DatabaseValueConvertible)?] = []
        converted.reserveCapacity(values.count)
        for value in values {
            switch value {
            case .null: converted.append(nil)
            case .integer(let v): converted.append(v)
            case .real(let v): converted.append(v)
            case .text(let v): converted.append(v)
            case .blob(let v): converted.append(v)
            }
        }
        return StatementArguments(converted)
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
