import Foundation

extension Date {
    /// RFC 3339 UTC, the form JSON answers write times in (`JSONStyle`) and human output shows
    /// them in too.
    public var rfc3339: String { ISO8601DateFormatter().string(from: self) }
}
