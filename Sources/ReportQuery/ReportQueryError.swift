/// Why an expression was refused, and where: the column (1-based, in characters) where the
/// problem starts. Its description is what the CLI prints and the API answers with a 400.
public struct ReportQueryError: Error, Sendable, Equatable, CustomStringConvertible {
    public var column: Int
    public var problem: Problem

    public init(column: Int, _ problem: Problem) {
        self.column = column
        self.problem = problem
    }

    public enum Problem: Sendable, Equatable {
        case expressionTooLong(bytes: Int)
        case tooManyTerms
        case controlCharacter
        case expectedField
        case unknownField(String)
        case invalidMetaKey(String)
        case expectedOperator(field: String)
        case operatorNotAllowed(Operator, field: String, allowed: [Operator])
        case expectedValue(field: String)
        case unterminatedQuote
        case invalidEscape(Character)
        case quoteInBareValue
        case expectedSpace
        case valueTooLong
        case invalidValue(field: String, value: String, expected: String)
    }

    public var description: String { "where: column \(column): \(message)" }

    var message: String {
        let limits = ReportQuery.Limits.self
        switch problem {
        case .expressionTooLong(let bytes): return "the expression is \(bytes) bytes; at most \(limits.maxExpressionBytes)"
        case .tooManyTerms: return "more than \(limits.maxTerms) terms"
        case .controlCharacter: return "control characters are not allowed"
        case .expectedField: return "expected a field (\(Field.names.joined(separator: ", ")))"
        case .unknownField(let name): return "unknown field '\(name)' (fields: \(Field.names.joined(separator: ", ")))"
        case .invalidMetaKey(let key):
            return "invalid meta key '\(key)': 1 to \(limits.maxMetaKeyLength) letters, digits, '_', '.' or '-'"
        case .expectedOperator(let field): return "expected an operator after '\(field)' (\(Self.list(Operator.allCases)))"
        case .operatorNotAllowed(let op, let field, let allowed):
            return "'\(field)' does not take '\(op.rawValue)' (it takes \(Self.list(allowed)))"
        case .expectedValue(let field): return "expected a value for '\(field)'"
        case .unterminatedQuote: return "unterminated quoted value"
        case .invalidEscape(let c): return "invalid escape '\\\(c)' (only \\\" and \\\\)"
        case .quoteInBareValue: return "a '\"' inside an unquoted value; quote the whole value"
        case .expectedSpace: return "expected a space between terms"
        case .valueTooLong: return "value longer than \(limits.maxValueBytes) bytes"
        case .invalidValue(let field, let value, let expected): return "'\(field)' cannot be '\(value)': expected \(expected)"
        }
    }

    private static func list(_ operators: [Operator]) -> String { operators.map(\.rawValue).joined(separator: " ") }
}
