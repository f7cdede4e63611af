import ReportModel

/// A parsed search expression (`--where`, `?where=`): terms that must all hold. Pure data: the
/// database compiles it (Storage's `QuerySQL`), binding every value as an argument; nothing here
/// is ever pasted into SQL text but the fixed column names a `Field` maps to.
public struct ReportQuery: Sendable, Equatable {
    public var terms: [Term]

    public init(terms: [Term] = []) { self.terms = terms }

    /// Every report.
    public static let all = ReportQuery()

    /// Parses `text` (docs/search.md): `field op value` terms separated by spaces. An empty
    /// expression is `all`.
    public static func parse(_ text: String) throws(ReportQueryError) -> ReportQuery {
        var parser = QueryParser(text)
        return ReportQuery(terms: try parser.terms())
    }

    /// Whether `text` names a group as `group=` and `/groups/{fingerprint}` take it: hex digits,
    /// either case, no more than a fingerprint has.
    public static func isFingerprintPrefix(_ text: String) -> Bool {
        (1...Limits.maxFingerprintLength).contains(text.utf8.count)
            && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ((0x61...0x66).contains($0 | 0x20)) }
    }

    /// The limits an expression is held to, checked before anything else is read.
    public enum Limits {
        public static let maxExpressionBytes = 2_000
        public static let maxTerms = 20
        public static let maxValueBytes = 256
        public static let maxMetaKeyLength = 64
        /// A group is named by a prefix of its fingerprint, a SHA-256 in hex.
        public static let maxFingerprintLength = 64
    }
}

/// One `field op value` condition, with the column it started at (1-based) for messages.
public struct Term: Sendable, Equatable {
    public var field: Field
    public var op: Operator
    public var value: TermValue
    public var column: Int

    public init(field: Field, op: Operator, value: TermValue, column: Int = 1) {
        self.field = field
        self.op = op
        self.value = value
        self.column = column
    }
}

/// What a term compares: a stored attribute of a report.
public enum Field: Sendable, Hashable, CustomStringConvertible {
    case app, version, osVersion, deviceModel, kind, group, namespace, user, time
    /// The triage state of the report's group: open, resolved or ignored (docs/triage.md).
    case state
    /// A key of the SDK meta the report arrived with (`sdk_records.meta`).
    case meta(String)

    /// The fixed fields by every name they are written as; `meta.KEY` is parsed apart.
    static let byName: [String: Field] = [
        "app": .app, "version": .version, "os_version": .osVersion, "os": .osVersion, "device_model": .deviceModel,
        "model": .deviceModel, "kind": .kind, "group": .group, "namespace": .namespace, "user": .user, "time": .time,
        "received": .time, "state": .state,
    ]

    /// The names an error lists, one per field, in the order docs/search.md gives them.
    public static let names = [
        "app", "version", "os_version", "device_model", "kind", "group", "state", "namespace", "user", "time", "meta.KEY",
    ]

    public var description: String {
        switch self {
        case .app: "app"
        case .version: "version"
        case .osVersion: "os_version"
        case .deviceModel: "device_model"
        case .kind: "kind"
        case .group: "group"
        case .namespace: "namespace"
        case .user: "user"
        case .time: "time"
        case .state: "state"
        case .meta(let key): "meta." + key
        }
    }

    /// The operators a field takes: versions compare in version order, times only compare, a
    /// kind, group or user is matched whole.
    public var operators: [Operator] {
        switch self {
        case .version, .osVersion: Operator.allCases
        case .app, .deviceModel, .namespace, .meta: [.equal, .notEqual, .contains, .notContains]
        case .kind, .group, .user, .state: [.equal, .notEqual]
        case .time: [.greater, .greaterOrEqual, .less, .lessOrEqual]
        }
    }

    /// Whether `meta.KEY`'s key is one the grammar accepts: letters, digits, `_`, `.`, `-`, so the
    /// JSON path it becomes needs no escaping.
    public static func isMetaKey(_ key: Substring) -> Bool {
        (1...ReportQuery.Limits.maxMetaKeyLength).contains(key.unicodeScalars.count)
            && key.unicodeScalars.allSatisfy { $0.isASCII && (isAlphanumeric($0) || "_.-".unicodeScalars.contains($0)) }
    }

    static func isAlphanumeric(_ c: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c)
    }
}

public enum Operator: String, Sendable, CaseIterable {
    case equal = "="
    case notEqual = "!="
    /// Contains, ignoring ASCII case.
    case contains = "~"
    case notContains = "!~"
    case greater = ">"
    case greaterOrEqual = ">="
    case less = "<"
    case lessOrEqual = "<="

    /// `!=` and `!~` also match reports without the attribute: "not on 17.2" includes the
    /// reports that never said.
    public var isNegated: Bool { self == .notEqual || self == .notContains }
}

/// A term's value, checked against its field when parsed.
public enum TermValue: Sendable, Equatable {
    case text(String)
    case kind(ReportKind)
    /// A lowercase hex prefix of a fingerprint.
    case fingerprintPrefix(String)
    case time(QueryTime)
}

/// A `time` value: an instant, or an age resolved against the clock when the query runs.
public enum QueryTime: Sendable, Equatable {
    case at(milliseconds: Int64)
    case ago(milliseconds: Int64)

    public func milliseconds(now: Int64) -> Int64 {
        switch self {
        case .at(let ms): ms
        case .ago(let ms): now.subtractingReportingOverflow(ms).overflow ? Int64.min : now - ms
        }
    }
}
