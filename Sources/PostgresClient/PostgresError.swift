/// What went wrong talking to PostgreSQL. A password never appears in a description: libpq's
/// connection messages are redacted before they get here.
public enum PostgresError: Error, CustomStringConvertible, Equatable {
    /// The connection could not be made (or remade by `reset()`): libpq's message.
    case connect(String)
    /// The server refused a statement: its SQLSTATE (`23505`, `40001`, `42601`, …), message and the SQL.
    case statement(sqlState: String, message: String, sql: String)
    /// The connection broke under a statement; `reset()` reconnects.
    case connectionLost(String)
    /// A result column of a type this client cannot decode.
    case unsupportedType(oid: UInt32, column: Int)

    public var description: String {
        switch self {
        case .connect(let message): "cannot connect to PostgreSQL: \(message)"
        case .statement(let state, let message, let sql): "PostgreSQL error \(state): \(message) (in: \(sql))"
        case .connectionLost(let message): "lost the connection to PostgreSQL: \(message)"
        case .unsupportedType(let oid, let column): "column \(column) has a type (oid \(oid)) this client cannot decode"
        }
    }

    /// The SQLSTATE of a refused statement; nil for the other cases.
    public var sqlState: String? {
        if case .statement(let state, _, _) = self { return state }
        return nil
    }

    /// `40001`: a SERIALIZABLE transaction lost a race; run it again.
    public var isSerializationFailure: Bool { sqlState == "40001" }
    /// `40P01`: the server broke a deadlock by aborting this transaction; run it again.
    public var isDeadlock: Bool { sqlState == "40P01" }
    /// `23505`: a unique constraint or index refused the row.
    public var isUniqueViolation: Bool { sqlState == "23505" }
}
