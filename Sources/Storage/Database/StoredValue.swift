import GRDB
import SQLInterface
import ReportModel

extension Row {
    /// The enum stored as text in `column`. A value no case has is a typed error, not a trap:
    /// GRDB's own conversion stops the process on a value it cannot convert.
    func stored<T: RawRepresentable>(_ column: String, as _: T.Type = T.self) throws(StorageError) -> T
    where T.RawValue == String {
        let value: DatabaseValue = self[column]
        guard let text = String.fromDatabaseValue(value), let known = T(rawValue: text) else {
            throw .unknownStoredValue(column: column, value: value.description)
        }
        return known
    }

    /// The build id stored as hex text in `column` (a column only `BuildID.hex` writes): one
    /// that is not is a typed error, as for `stored(_:)`.
    func storedBuildID(_ column: String) throws(StorageError) -> BuildID {
        let value: DatabaseValue = self[column]
        guard let text = String.fromDatabaseValue(value), let id = try? BuildID(text) else {
            throw .unknownStoredValue(column: column, value: value.description)
        }
        return id
    }
}

extension SQLRow {
    /// The enum stored as text in column `i` (named `column` in the error), as `Row.stored`.
    func stored<T: RawRepresentable>(_ i: Int, _ column: String, as _: T.Type = T.self) throws -> T where T.RawValue == String {
        try storedText(i, column) { T(rawValue: $0) }
    }

    /// The enum stored as text in the column named `column`.
    func stored<T: RawRepresentable>(_ column: String, as _: T.Type = T.self) throws -> T where T.RawValue == String {
        try stored(try position(column), column)
    }

    /// The build id stored as hex text in the column named `column`.
    func storedBuildID(_ column: String) throws -> BuildID {
        try storedBuildID(try position(column), column)
    }

    /// The build id stored as hex text in column `i`, as `Row.storedBuildID`.
    func storedBuildID(_ i: Int, _ column: String) throws -> BuildID {
        try storedText(i, column) { try? BuildID($0) }
    }

    /// Column `i`'s text made into a value by `make`; NULL, or text `make` refuses, is the typed
    /// error, quoted as GRDB's `DatabaseValue.description` quotes it.
    private func storedText<T>(_ i: Int, _ column: String, _ make: (String) -> T?) throws -> T {
        let text = try optionalString(i)
        guard let text, let value = make(text) else {
            throw StorageError.unknownStoredValue(column: column, value: text.map { "\"\($0)\"" } ?? "NULL")
        }
        return value
    }
}
