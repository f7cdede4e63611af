import GRDB
import ReportModel
import ReportQuery

/// A parsed search (`ReportQuery`) as SQL over `QuerySQL.from`: a WHERE condition and its
/// arguments. The SQL text is made only of the fixed fragments below, one per field and
/// operator; every value, meta key (as a JSON path) and time is a bound argument.
struct QuerySQL {
    var conditions: [String] = []
    var arguments: [any DatabaseValueConvertible] = []

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

    /// A meta key's value as text (numbers and booleans as SQLite prints them).
    static let metaValue = "CAST(json_extract(m.meta, ?) AS TEXT)"

    init(_ query: ReportQuery, now: Int64) {
        for term in query.terms { add(term, now: now) }
    }

    /// `WHERE …` for the conditions, "" without any.
    var whereClause: String { conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ") }

    mutating func add(_ condition: String, _ arguments: [any DatabaseValueConvertible]) {
        conditions.append(condition)
        self.arguments += arguments
    }

    private mutating func add(_ term: Term, now: Int64) {
        switch (term.field, term.value) {
        case (.meta(let key), .text(let value)):
            let (negated, match) = Self.textMatch(Self.metaValue, term.op)
            add("\(negated ? "NOT EXISTS" : "EXISTS") (SELECT 1 FROM sdk_records m WHERE m.report_id = r.id AND \(match))", [Self.jsonPath(key), value])
        case (.user, .text(let value)):
            let device = ReportIdentitySQL.deviceId
            add(term.op == .equal ? "(rs.user_id = ? OR \(device) = ?)" : "(rs.user_id IS NOT ? AND \(device) IS NOT ?)", [value, value])
        case (.group, .fingerprintPrefix(let prefix)):
            let match = "substr(s.fingerprint, 1, ?) = ?"
            add(term.op == .equal ? match : "coalesce(\(match), 0) = 0", [prefix.utf8.count, prefix])
        case (.kind, .kind(let kind)):
            add(term.op == .equal ? "r.kind = ?" : "r.kind != ?", [kind.rawValue])
        case (let field, .time(let time)):
            guard let column = Self.column(field), let op = Self.comparison(term.op) else { return matchNothing() }
            add("\(column) \(op) ?", [time.milliseconds(now: now)])
        case (let field, .text(let value)):
            guard let column = Self.column(field) else { return matchNothing() }
            if let op = Self.comparison(term.op) {
                add("\(Self.versionCompare)(\(column), ?) \(op) 0", [value])
            } else {
                let (negated, match) = Self.textMatch(column, term.op)
                add(negated ? "coalesce(\(match), 0) = 0" : match, [value])
            }
        default:
            matchNothing()
        }
    }

    /// A term the parser never makes (it pairs each field with its operators and one kind of
    /// value, `QueryParser.check`): it matches nothing rather than being dropped, which would
    /// widen the search.
    private mutating func matchNothing() { add("0", []) }

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
    private static func textMatch(_ expression: String, _ op: Operator) -> (negated: Bool, match: String) {
        let match = op == .equal || op == .notEqual ? "\(expression) = ?" : "instr(lower(\(expression)), lower(?)) > 0"
        return (op.isNegated, match)
    }
}
