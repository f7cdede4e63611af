import Foundation
import Hummingbird

/// Typed access to a request's query string: a value that does not parse is a 400 naming the
/// parameter, never a silently ignored filter.
public struct QueryParameters {
    let request: Request

    public init(_ request: Request) { self.request = request }

    /// The parameter's text; nil when absent. An empty value counts as absent.
    public func string(_ name: String) -> String? {
        guard let value = request.uri.queryParameters.get(name), !value.isEmpty else { return nil }
        return value
    }

    /// A value parsed by `parse` (e.g. an enum's `init(rawValue:)`); 400 when it returns nil.
    public func value<T>(_ name: String, expected: String, _ parse: (String) -> T?) throws -> T? {
        guard let text = string(name) else { return nil }
        guard let value = parse(text) else { throw APIError.badRequest("query parameter \(name): expected \(expected)") }
        return value
    }

    public func int(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        try value(name, expected: "an integer in \(range.lowerBound)...\(range.upperBound)") { Int($0).flatMap { range.contains($0) ? $0 : nil } }
    }
}
