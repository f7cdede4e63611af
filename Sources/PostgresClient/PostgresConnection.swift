import CLibPQ
import Foundation
import SQLInterface

/// One libpq connection to PostgreSQL, run synchronously: the store's callers are OS threads
/// (the slots) and the server's blocking-work pool, the same threads GRDB blocks today, never an
/// event loop or the Swift concurrency pool.
///
/// Each distinct statement text is numbered (`?` → `$n`), prepared once under a generated name
/// and kept for the connection's life; statements run with `PQexecPrepared` and binary results.
///
/// Sendable: a connection is used by one thread at a time (a slot's own, or one pool task's
/// turn, handed over by whoever owns it); libpq's `PGconn` and the statement cache are not
/// safe to touch from two threads at once, and nothing here locks.
public final class PostgresConnection: SQLExecutor, @unchecked Sendable {
    public var dialect: SQLDialect { .postgres }

    /// `PGconn *`: opaque to Swift, owned by this object from init to deinit.
    private let connection: OpaquePointer
    /// Strings that must never leave in an error: the password parameter and one inside the URL.
    private let secrets: [String]
    private var statements: [String: Statement] = [:]
    private var nextStatementNumber = 0

    /// `url` is a libpq connection URI (`postgres://USER@HOST:PORT/DB?sslmode=verify-full&sslrootcert=…`),
    /// so TLS, timeouts and the rest are libpq's own parameters. `password`, when given, goes to
    /// libpq as a parameter of its own rather than into the URL, where escaping would matter and
    /// a logged URL would show it; without one, libpq's `PGPASSWORD`, `PGPASSFILE` and
    /// `~/.pgpass` apply as usual.
    public init(url: String, password: String? = nil) throws(PostgresError) {
        var secrets: [String] = []
        if let password, !password.isEmpty { secrets.append(password) }
        if let inURL = Self.passwordInside(url) { secrets.append(inURL) }
        self.secrets = secrets

        // expand_dbname: `dbname` holds the whole URI; the keywords after it override its
        // parameters. UTF8 because SQLValue's text is Swift strings.
        var keywords = ["dbname", "client_encoding"]
        var values = [url, "UTF8"]
        if let password {
            keywords.append("password")
            values.append(password)
        }
        let made: OpaquePointer? = withCStrings(keywords) { k in withCStrings(values) { v in PQconnectdbParams(k, v, 1) } }
        guard let made else { throw .connect("libpq could not allocate a connection") }
        guard PQstatus(made) == CONNECTION_OK else {
            let message = Self.redact(Self.errorMessage(made), secrets)
            PQfinish(made)
            throw .connect(message)
        }
        connection = made
        // Notices (a ROLLBACK with no transaction, a dropped table that did not exist) would go
        // to stderr; the server's errors are what callers act on.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }

    deinit { PQfinish(connection) }

    /// Whether libpq still holds a working connection. A server that went away is noticed by the
    /// next statement, which fails with `.connectionLost`; this is false from then on.
    public var isConnected: Bool { PQstatus(connection) == CONNECTION_OK }

    /// Reconnects with the same parameters. The server forgot this connection's prepared
    /// statements, so the cache goes too.
    public func reset() throws(PostgresError) {
        statements.removeAll()
        PQreset(connection)
        guard PQstatus(connection) == CONNECTION_OK else {
            throw .connect(Self.redact(Self.errorMessage(connection), secrets))
        }
    }

    // MARK: - Statements

    @discardableResult
    public func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int {
        try run(sql, arguments) { result, _ in
            Int(String(cString: PQcmdTuples(result))) ?? 0
        }
    }

    public func rows(_ sql: String, _ arguments: [SQLValue]) throws -> [SQLRow] {
        try run(sql, arguments) { result, statement throws(PostgresError) in
            try Self.decodeRows(result, text: statement.textResults)
        }
    }

    public func insert(_ sql: String, _ arguments: [SQLValue]) throws -> Int64 {
        guard let id = try rows(sql + " RETURNING id", arguments).first?.optionalInt64(0) else {
            throw PostgresError.statement(sqlState: "P0002", message: "the insert returned no id", sql: sql)
        }
        return id
    }

    /// libpq holds the whole result once the query returns, so this only spares the caller
    /// the rows after the one it stops at.
    public func scan(_ sql: String, _ arguments: [SQLValue], _ body: (SQLRow) throws -> Bool) throws {
        for row in try rows(sql, arguments) {
            guard try body(row) else { return }
        }
    }

    /// Runs statements with no parameters, several at once (a migration's script), through the
    /// simple query protocol: they run in one implicit transaction unless they manage their own.
    public func executeScript(_ sql: String) throws(PostgresError) {
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        try check(result, sql: sql)
    }

    /// Runs `body` inside BEGIN … COMMIT. Any error thrown out of `body` rolls the transaction
    /// back and is rethrown; a transaction a failed statement aborted (the error caught inside
    /// `body`) is rolled back and reported, never committed as if whole.
    /// `begin` is the statement that opens it: `BEGIN`, or one that names an isolation level.
    public func transaction<T>(begin: String = "BEGIN", _ body: (PostgresConnection) throws -> T) throws -> T {
        try executeScript(begin)
        do {
            let value = try body(self)
            if PQtransactionStatus(connection) == PQTRANS_INERROR {
                throw PostgresError.statement(
                    sqlState: "25P02", message: "a statement failed inside the transaction, so it was rolled back", sql: "COMMIT")
            }
            try executeScript("COMMIT")
            return value
        } catch {
            // A COMMIT that failed has already ended the transaction; a lost connection has too.
            if PQtransactionStatus(connection) != PQTRANS_IDLE, isConnected { try? executeScript("ROLLBACK") }
            throw error
        }
    }

    // MARK: - Preparing

    /// A statement prepared on this connection. `parameterTypes` are what the server settled on
    /// (inferred from context, or declared where it could not infer); `textResults` when a result
    /// column has a type whose binary form this client does not read.
    private struct Prepared {
        var name: String
        var parameterTypes: [UInt32]
        var textResults: Bool
    }

    /// What the cache holds for one statement text: the statement as the server typed it from
    /// context alone (nil when it could not), and the statements prepared with types the
    /// arguments declared, by those types (one whose preparation the server refused maps to
    /// `inferred`, so it is tried once).
    ///
    /// Most placeholders take their type from context (`WHERE id = ?`), and one preparation
    /// serves every call. PostgreSQL types a placeholder with no context as text
    /// (`SELECT ?`, `SELECT ?, ?`) or not at all (`SELECT ? IS NULL`): there an integer, real or
    /// blob argument declares its own type, so it comes back as what it went in as.
    private struct Statement {
        var numbered: String
        var count: Int
        var inferred: Prepared?
        var declared: [[UInt32]: Prepared] = [:]
    }

    private func run<T>(_ sql: String, _ arguments: [SQLValue], _ read: (OpaquePointer, Prepared) throws(PostgresError) -> T) throws(PostgresError) -> T {
        let statement = try prepared(sql, arguments)
        let parameters = zip(arguments, statement.parameterTypes).map { EncodedParameter($0, as: $1) }
        // One buffer for every parameter's bytes, so their pointers stay valid for the call; a
        // byte more so an empty one (an empty blob, which is not NULL) still has an address.
        var buffer: [UInt8] = []
        var offsets: [Int] = []
        for p in parameters {
            offsets.append(buffer.count)
            if let bytes = p.bytes {
                buffer.append(contentsOf: bytes)
                if !p.binary { buffer.append(0) }
            }
        }
        buffer.append(0)
        let lengths = parameters.map { Int32($0.bytes?.count ?? 0) }
        let formats = parameters.map { Int32($0.binary ? 1 : 0) }
        let result: OpaquePointer? = buffer.withUnsafeBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { chars in
                let values: [UnsafePointer<CChar>?] = parameters.indices.map { i in
                    parameters[i].bytes == nil ? nil : chars.baseAddress! + offsets[i]
                }
                return PQexecPrepared(
                    connection, statement.name, Int32(parameters.count), values, lengths, formats, statement.textResults ? 0 : 1)
            }
        }
        defer { PQclear(result) }
        try check(result, sql: sql)
        return try read(result!, statement)
    }

    private func prepared(_ sql: String, _ arguments: [SQLValue]) throws(PostgresError) -> Prepared {
        var statement: Statement
        if let known = statements[sql] {
            statement = known
        } else {
            let (numbered, count) = numberPlaceholders(sql)
            guard count == arguments.count else { throw Self.arityError(count, arguments.count, sql) }
            statement = Statement(numbered: numbered, count: count)
            do {
                statement.inferred = try preparePreservingTransaction(numbered, declaring: nil, sql: sql)
            } catch let error where error.sqlState == Self.indeterminateDatatype {
                statement.inferred = nil
            }
            statements[sql] = statement
        }
        guard statement.count == arguments.count else { throw Self.arityError(statement.count, arguments.count, sql) }

        let wanted: [UInt32]
        if let inferred = statement.inferred {
            wanted = zip(inferred.parameterTypes, arguments).map { type, argument in
                type == TypeOID.text && argument != .null ? TypeOID.declared(for: argument) : type
            }
            if wanted == inferred.parameterTypes { return inferred }
        } else {
            wanted = arguments.map(TypeOID.declared(for:))
        }
        if let known = statement.declared[wanted] { return known }
        let made: Prepared
        do {
            made = try prepareDeclaring(statement.numbered, wanted, sql: sql)
        } catch let error where statement.inferred != nil && error.sqlState != nil {
            // The text type came from context after all (`text_col = ?`, `COALESCE(?, text_col)`):
            // the argument goes as text, which the server converts as it would a literal.
            made = statement.inferred!
        }
        statement.declared[wanted] = made
        statements[sql] = statement
        return made
    }

    /// The server's answer to a placeholder nothing around it gives a type to (`SELECT ? IS NULL`).
    private static let indeterminateDatatype = "42P18"

    /// Prepares with the types the arguments declare. A NULL declares none (unknown), which
    /// may still leave nothing to infer from where it stands alone; its type cannot matter
    /// there, so it is sent as text.
    private func prepareDeclaring(_ numbered: String, _ types: [UInt32], sql: String) throws(PostgresError) -> Prepared {
        do {
            return try preparePreservingTransaction(numbered, declaring: types, sql: sql)
        } catch let error where error.sqlState == Self.indeterminateDatatype && types.contains(TypeOID.unknownType) {
            let asText = types.map { $0 == TypeOID.unknownType ? TypeOID.text : $0 }
            return try preparePreservingTransaction(numbered, declaring: asText, sql: sql)
        }
    }

    private static func arityError(_ placeholders: Int, _ arguments: Int, _ sql: String) -> PostgresError {
        .statement(sqlState: "08P01", message: "\(arguments) arguments for \(placeholders) placeholders", sql: sql)
    }

    /// Inside a transaction a failed PREPARE would abort it, and some tries are expected to
    /// fail (a type the server cannot infer, a declared type that does not fit the context): a
    /// savepoint keeps the caller's transaction as it was.
    private func preparePreservingTransaction(_ numbered: String, declaring types: [UInt32]?, sql: String) throws(PostgresError) -> Prepared {
        guard PQtransactionStatus(connection) == PQTRANS_INTRANS else { return try prepare(numbered, declaring: types, sql: sql) }
        try executeScript("SAVEPOINT stackline_prepare")
        do {
            let p = try prepare(numbered, declaring: types, sql: sql)
            try executeScript("RELEASE SAVEPOINT stackline_prepare")
            return p
        } catch {
            if isConnected { try? executeScript("ROLLBACK TO SAVEPOINT stackline_prepare; RELEASE SAVEPOINT stackline_prepare") }
            throw error
        }
    }

    /// PQprepare, then PQdescribePrepared for the types the server settled on.
    private func prepare(_ numbered: String, declaring types: [UInt32]?, sql: String) throws(PostgresError) -> Prepared {
        nextStatementNumber += 1
        let name = "stackline_\(nextStatementNumber)"
        let made = types.map { PQprepare(connection, name, numbered, Int32($0.count), $0) } ?? PQprepare(connection, name, numbered, 0, nil)
        defer { PQclear(made) }
        try check(made, sql: sql)
        let description = PQdescribePrepared(connection, name)
        defer { PQclear(description) }
        try check(description, sql: sql)
        let parameterTypes = (0..<PQnparams(description)).map { PQparamtype(description, $0) }
        let resultTypes = (0..<PQnfields(description)).map { PQftype(description, $0) }
        return Prepared(
            name: name, parameterTypes: parameterTypes,
            textResults: !resultTypes.allSatisfy(TypeOID.binaryDecodable.contains))
    }

    // MARK: - Results

    private static func decodeRows(_ result: OpaquePointer, text: Bool) throws(PostgresError) -> [SQLRow] {
        let rowCount = PQntuples(result), columnCount = PQnfields(result)
        let types = (0..<columnCount).map { PQftype(result, $0) }
        let columns = (0..<columnCount).map { c in PQfname(result, c).map { String(cString: $0) } ?? "" }
        var rows: [SQLRow] = []
        rows.reserveCapacity(Int(rowCount))
        for r in 0..<rowCount {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columnCount))
            for c in 0..<columnCount {
                if PQgetisnull(result, r, c) != 0 {
                    values.append(.null)
                    continue
                }
                let length = Int(PQgetlength(result, r, c))
                let start = PQgetvalue(result, r, c)!
                if text {
                    values.append(try decodeText(String(cString: start), type: types[Int(c)], column: Int(c)))
                } else {
                    let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(start).assumingMemoryBound(to: UInt8.self), count: length)
                    values.append(try decodeBinary(bytes, type: types[Int(c)], column: Int(c)))
                }
            }
            rows.append(SQLRow(values, columns: columns))
        }
        return rows
    }

    /// Throws unless `result` is a success. A broken connection is `.connectionLost` whatever
    /// the result says; a server error carries its SQLSTATE.
    private func check(_ result: OpaquePointer?, sql: String) throws(PostgresError) {
        let status = result.map(PQresultStatus) ?? PGRES_FATAL_ERROR
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            break
        }
        if PQstatus(connection) != CONNECTION_OK {
            throw .connectionLost(Self.redact(Self.errorMessage(connection), secrets))
        }
        guard let result else { throw .connectionLost(Self.redact(Self.errorMessage(connection), secrets)) }
        func field(_ code: Character) -> String? {
            PQresultErrorField(result, Int32(code.asciiValue!)).map { String(cString: $0) }
        }
        guard let state = field("C") else {
            // No SQLSTATE: libpq's own failure (out of memory, a protocol error), not the server's.
            throw .connectionLost(Self.redact(String(cString: PQresultErrorMessage(result)), secrets))
        }
        var message = field("M") ?? "(no message)"
        if let detail = field("D") { message += "; \(detail)" }
        if let hint = field("H") { message += "; hint: \(hint)" }
        throw .statement(sqlState: state, message: message, sql: sql)
    }

    // MARK: - Helpers

    private static func errorMessage(_ connection: OpaquePointer) -> String {
        String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func redact(_ message: String, _ secrets: [String]) -> String {
        secrets.reduce(message) { $0.replacingOccurrences(of: $1, with: "[password]") }
    }

    /// The password a URL carries itself (`postgres://user:secret@host/db`), as libpq reads it.
    private static func passwordInside(_ url: String) -> String? {
        guard let options = PQconninfoParse(url, nil) else { return nil }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "password", let value = option.pointee.val {
                let password = String(cString: value)
                return password.isEmpty ? nil : password
            }
            option += 1
        }
        return nil
    }
}

/// `strings` as a NULL-terminated array of C strings, valid inside `body`.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return body(copies.map { UnsafePointer($0) } + [nil])
}
