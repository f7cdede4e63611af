import Foundation
import ReportModel

/// The recursive-descent reader of docs/search.md's grammar, one Unicode scalar at a time:
///
///     expression := space* (term (space+ term)*)? space*
///     term       := field operator value
///     field      := name | "meta." key
///     operator   := "=" | "!=" | "~" | "!~" | ">" | ">=" | "<" | "<="
///     value      := bare | '"' (char | '\"' | '\\')* '"'
///
/// Columns in errors count scalars from 1.
struct QueryParser {
    private let scalars: [Unicode.Scalar]
    private let text: String
    private var position = 0

    init(_ text: String) {
        self.text = text
        scalars = Array(text.unicodeScalars)
    }

    mutating func terms() throws(ReportQueryError) -> [Term] {
        try checkBounds()
        var terms: [Term] = []
        skipSpaces()
        while position < scalars.count {
            guard terms.count < ReportQuery.Limits.maxTerms else { throw ReportQueryError(column: column, .tooManyTerms) }
            terms.append(try term())
            guard position == scalars.count || scalars[position] == " " else { throw ReportQueryError(column: column, .expectedSpace) }
            skipSpaces()
        }
        return terms
    }

    /// Whole-expression limits, before any term is read.
    private func checkBounds() throws(ReportQueryError) {
        let bytes = text.utf8.count
        guard bytes <= ReportQuery.Limits.maxExpressionBytes else { throw ReportQueryError(column: 1, .expressionTooLong(bytes: bytes)) }
        if let bad = scalars.firstIndex(where: Self.isControl) { throw ReportQueryError(column: bad + 1, .controlCharacter) }
    }

    private var column: Int { position + 1 }

    private mutating func skipSpaces() {
        while position < scalars.count, scalars[position] == " " { position += 1 }
    }

    private mutating func term() throws(ReportQueryError) -> Term {
        let start = column
        let (field, name) = try self.field()
        let op = try self.op(after: name, field: field)
        let valueColumn = column
        let raw = try value(for: name)
        return Term(field: field, op: op, value: try Self.check(raw, for: field, column: valueColumn), column: start)
    }

    /// A name of letters, digits, `_`, `.` and `-`, up to the operator.
    private mutating func field() throws(ReportQueryError) -> (Field, String) {
        let start = position
        while position < scalars.count, Self.isNameScalar(scalars[position]) { position += 1 }
        let name = String(String.UnicodeScalarView(scalars[start..<position]))
        guard !name.isEmpty else {
            throw ReportQueryError(column: start + 1, .expectedField)
        }
        if name.hasPrefix("meta.") {
            let key = name.dropFirst("meta.".count)
            guard Field.isMetaKey(key) else { throw ReportQueryError(column: start + 1 + "meta.".count, .invalidMetaKey(String(key))) }
            return (.meta(String(key)), name)
        }
        guard let field = Field.byName[name] else { throw ReportQueryError(column: start + 1, .unknownField(name)) }
        return (field, name)
    }

    private mutating func op(after name: String, field: Field) throws(ReportQueryError) -> Operator {
        let start = column
        func next(_ offset: Int) -> Unicode.Scalar? { position + offset < scalars.count ? scalars[position + offset] : nil }
        let op: Operator
        switch (next(0), next(1)) {
        case ("!", "="): op = .notEqual
        case ("!", "~"): op = .notContains
        case (">", "="): op = .greaterOrEqual
        case ("<", "="): op = .lessOrEqual
        case ("=", _): op = .equal
        case ("~", _): op = .contains
        case (">", _): op = .greater
        case ("<", _): op = .less
        default: throw ReportQueryError(column: start, .expectedOperator(field: name))
        }
        position += op.rawValue.unicodeScalars.count
        guard field.operators.contains(op) else {
            throw ReportQueryError(column: start, .operatorNotAllowed(op, field: name, allowed: field.operators))
        }
        return op
    }

    /// A bare word up to the next space, or a quoted string with `\"` and `\\` escapes.
    private mutating func value(for name: String) throws(ReportQueryError) -> String {
        let start = column
        guard position < scalars.count, scalars[position] != " " else { throw ReportQueryError(column: start, .expectedValue(field: name)) }
        var value = String.UnicodeScalarView()
        if scalars[position] == "\"" {
            position += 1
            while true {
                guard position < scalars.count else { throw ReportQueryError(column: start, .unterminatedQuote) }
                let c = scalars[position]
                position += 1
                if c == "\"" { break }
                if c == "\\" {
                    guard position < scalars.count else { throw ReportQueryError(column: start, .unterminatedQuote) }
                    let escaped = scalars[position]
                    guard escaped == "\"" || escaped == "\\" else {
                        throw ReportQueryError(column: column, .invalidEscape(Character(escaped)))
                    }
                    position += 1
                    value.append(escaped)
                } else {
                    value.append(c)
                }
            }
        } else {
            while position < scalars.count, scalars[position] != " " {
                guard scalars[position] != "\"" else { throw ReportQueryError(column: column, .quoteInBareValue) }
                value.append(scalars[position])
                position += 1
            }
        }
        let text = String(value)
        guard text.utf8.count <= ReportQuery.Limits.maxValueBytes else { throw ReportQueryError(column: start, .valueTooLong) }
        return text
    }

    /// The value as its field reads it: a kind, a fingerprint prefix, a time, else text.
    private static func check(_ value: String, for field: Field, column: Int) throws(ReportQueryError) -> TermValue {
        func invalid(_ expected: String) -> ReportQueryError {
            ReportQueryError(column: column, .invalidValue(field: field.description, value: value, expected: expected))
        }
        switch field {
        case .kind:
            guard let kind = ReportKind(rawValue: value) else { throw invalid("crash or lag") }
            return .kind(kind)
        case .state:
            guard ["open", "resolved", "ignored"].contains(value) else { throw invalid("open, resolved or ignored") }
            return .text(value)
        case .group:
            guard ReportQuery.isFingerprintPrefix(value) else { throw invalid("a fingerprint or a prefix of it (hex digits)") }
            return .fingerprintPrefix(value.lowercased())
        case .time:
            guard let time = QueryTimeParser.parse(value) else {
                throw invalid("an age (30m, 24h, 7d, 2w), a date (2026-11-28) or an RFC 3339 time (2026-11-28T09:30:00Z)")
            }
            return .time(time)
        default:
            guard !value.isEmpty else { throw invalid("a value that is not empty") }
            return .text(value)
        }
    }

    static func isNameScalar(_ c: Unicode.Scalar) -> Bool {
        c.isASCII && (Field.isAlphanumeric(c) || c == "_" || c == "." || c == "-")
    }

    /// C0, DEL and C1: what a terminal or a log line would act on.
    static func isControl(_ c: Unicode.Scalar) -> Bool { c.value < 0x20 || (0x7f...0x9f).contains(c.value) }
}
