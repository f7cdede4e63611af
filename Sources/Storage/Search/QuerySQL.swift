import GRDB
import ReportModel
import ReportQuery
import SQLInterface

/// A parsed search (`ReportQuery`) as SQL over `QuerySQL.from`: a WHERE condition and its
/// arguments. The SQL text is made only of the fixed fragments below, one per field and
/// operator; every value, meta key (as a JSON path) and time is a bound argument.
///
/// Ordering comparisons (`version>=2.1`) follow `VersionOrder`, which is Swift: SQLite calls it
/// as a function registered on each connection; on PostgreSQL the column's distinct values are
/// read first and compared here, and the term becomes a list of the values that pass.
struct QuerySQL {
    var conditions: [String] = []
    var arguments: [SQLValue] = []
    let dialect: SQLDialect

    /// What a search and a facet read: every report, its result and group if processed, and
    /// what its SDK meta said (session, user, device) if it came from an SDK.
    static let from = """
        FROM reports r LEFT JOIN results s ON s.report_id = r.id LEFT JOIN report_sessions rs ON rs.report_id = r.id
        """

    /// The SQL function ordering versions (`VersionOrder.compare`), registered on every connection.
    static let versionCompare = "stackline_version_compare"

    /// The one definition of a version-order comparison in SQL, for `ServiceDatabase` to register
    /// on each connection it opens. NULL when either side is (a report without a version).
    static func versionFunction() -> DatabaseFunction {
        DatabaseFunction(versionCompare, argumentCount: 2, pure: true) { values in
            guard let a = String.fromDatabaseValue(values[0]), let b = String.fromDatabaseValue(values[1]) else { return nil }
            return VersionOrder.compare(a, b)
        }
    }

    /// The report's app and version are those its SDK meta named, else its own, as release
    /// health counts them (docs/releases.md).
    static func column(_ field: Field) -> String? {
        switch field {
        case .app: "coalesce(rs.app, r.app)"
        case .version: "coalesce(rs.version, r.version)"
        case .osVersion: ReportIdentitySQL.osVersion
        case .deviceModel: ReportIdentitySQL.deviceModel
        case .kind: "r.kind"
        case .group: "s.fingerprint"
        case .namespace: "r.namespace"
        case .time: "r.received_at"
        // A processed report's group's state as stored (no row: open); NULL before processing.
        case .state:
            "CASE WHEN s.fingerprint IS NULL THEN NULL ELSE coalesce((SELECT gs.state FROM group_states gs WHERE gs.fingerprint = s.fingerprint), 'open') END"
        case .user, .meta: nil
        }
    }

    /// A meta key as a JSON path; the key's characters (`Field.isMetaKey`) need no escaping
    /// inside the quotes, which keep its dots from reading as nested objects.
    static func jsonPath(_ key: String) -> String { "$.\"" + key + "\"" }

    /// A meta key's value as text (numbers as each engine prints them), from the meta's key
    /// bound as `metaKeyArgument`.
    static func metaValue(_ dialect: SQLDialect) -> String {
        dialect == .sqlite ? "CAST(json_extract(m.meta, ?) AS TEXT)" : "(CAST(m.meta AS jsonb) ->> CAST(? AS text))"
    }

    /// The argument `metaValue` reads a key by: a JSON path on SQLite, the key itself on PostgreSQL.
    static func metaKeyArgument(_ key: String, _ dialect: SQLDialect) -> SQLValue {
        .text(dialect == .sqlite ? jsonPath(key) : key)
    }

    /// Builds the conditions inside the read they are used in (`db`): on PostgreSQL an
    /// ordering comparison reads the column's values first.
    init(_ query: ReportQuery, now: Int64, db: SQLExecutor) throws {
        dialect = db.dialect
        for term in query.terms { try add(term, now: now, db: db) }
    }

    /// `WHERE …` for the conditions, "" without any.
    var whereClause: String { conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ") }

    mutating func add(_ condition: String, _ arguments: [SQLValue]) {
        conditions.append(condition)
        self.arguments += arguments
    }

    private mutating func add(_ term: Term, now: Int64, db: SQLExecutor) throws {
        switch (term.field, term.value) {
        case (.meta(let key), .text(let value)):
            let (negated, match) = textMatch(Self.metaValue(dialect), term.op)
            add(
                "\(negated ? "NOT EXISTS" : "EXISTS") (SELECT 1 FROM sdk_records m WHERE m.report_id = r.id AND \(match))",
                [Self.metaKeyArgument(key, dialect), .text(value)])
        case (.user, .text(let value)):
            let device = ReportIdentitySQL.deviceId
            add(
                term.op == .equal
                    ? "(rs.user_id = ? OR \(device) = ?)" : "(rs.user_id IS DISTINCT FROM ? AND \(device) IS DISTINCT FROM ?)",
                [.text(value), .text(value)])
        case (.group, .fingerprintPrefix(let prefix)):
            let match = "substr(s.fingerprint, 1, ?) = ?"
            add(term.op == .equal ? match : "NOT coalesce(\(match), FALSE)", [.integer(Int64(prefix.utf8.count)), .text(prefix)])
        case (.kind, .kind(let kind)):
            add(term.op == .equal ? "r.kind = ?" : "r.kind != ?", [.text(kind.rawValue)])
        case (let field, .time(let time)):
            guard let column = Self.column(field), let op = Self.comparison(term.op) else { return matchNothing() }
            add("\(column) \(op) ?", [.integer(time.milliseconds(now: now))])
        case (let field, .text(let value)):
            guard let column = Self.column(field) else { return matchNothing() }
            if let op = Self.comparison(term.op) {
                if dialect == .sqlite {
                    add("\(Self.versionCompare)(\(column), ?) \(op) 0", [.text(value)])
                } else {
                    let passing = try Self.values(of: column, db).filter { term.op.holds(VersionOrder.compare($0, value)) }
                    guard !passing.isEmpty else { return matchNothing() }
                    add("\(column) IN (\(sqlPlaceholders(passing.count)))", passing.map { SQLValue.text($0) })
                }
            } else {
                let (negated, match) = textMatch(column, term.op)
                add(negated ? "NOT coalesce(\(match), FALSE)" : match, [.text(value)])
            }
        default:
            matchNothing()
        }
    }

    /// The distinct values `column` takes over `from` (PostgreSQL's ordering comparisons).
    private static func values(of column: String, _ db: SQLExecutor) throws -> [String] {
        try db.rows("SELECT DISTINCT \(column) \(from) WHERE \(column) IS NOT NULL").map { try $0.string(0) }
    }

    /// A term the parser never makes (it pairs each field with its operators and one kind of
    /// value, `QueryParser.check`): it matches nothing rather than being dropped, which would
    /// widen the search.
    private mutating func matchNothing() { add("FALSE", []) }

    /// The SQL of an ordering operator; nil for the others.
    private static func comparison(_ op: Operator) -> String? {
        switch op {
        case .greater: ">"
        case .greaterOrEqual: ">="
        case .less: "<"
        case .lessOrEqual: "<="
        case .equal, .notEqual, .contains, .notContains: nil
        }
    }

    /// `=` or `~` of `expression` with one argument, and whether the operator negates it (the
    /// caller negates so that a report without the value matches). Contains ignores ASCII case
    /// and reads the value as text, not a pattern.
    private func textMatch(_ expression: String, _ op: Operator) -> (negated: Bool, match: String) {
        let find = dialect == .sqlite ? "instr" : "strpos"
        let match = op == .equal || op == .notEqual ? "\(expression) = ?" : "\(find)(lower(\(expression)), lower(?)) > 0"
        return (op.isNegated, match)
    }
}

extension Operator {
    /// Whether a comparison's result (`VersionOrder.compare`: negative, zero, positive) passes
    /// this ordering operator.
    fileprivate func holds(_ order: Int) -> Bool {
        switch self {
        case .greater: order > 0
        case .greaterOrEqual: order >= 0
        case .less: order < 0
        case .lessOrEqual: order <= 0
        case .equal: order == 0
        case .notEqual: order != 0
        case .contains, .notContains: false
        }
    }
}
