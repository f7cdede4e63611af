import Foundation
import JSONFormat
import ReportFormats

extension JSONValue {
    /// Parses JSON text after the checks every JSON report passes first (UTF-8, nesting, value
    /// count); the error is one line saying what is wrong and where.
    public static func parse(_ data: Data) throws(JSONTextError) -> JSONValue {
        do {
            try JSONPreflight.check(data)
        } catch {
            throw JSONTextError(message: "\(error)")
        }
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch let error as DecodingError {
            switch error {
            case .dataCorrupted(let context):
                throw JSONTextError(message: context.underlyingError.map { "\($0)" } ?? context.debugDescription)
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context):
                throw JSONTextError(message: context.debugDescription)
            @unknown default:
                throw JSONTextError(message: "\(error)")
            }
        } catch {
            throw JSONTextError(message: "\(error)")
        }
    }
}

/// Why bytes are not JSON text.
public struct JSONTextError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
