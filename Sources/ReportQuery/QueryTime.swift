import Foundation

/// `time` values: an age back from now (`30m`, `24h`, `7d`, `2w`), a UTC date (`2026-11-28`,
/// its midnight) or an RFC 3339 time with a zone (`2026-11-28T09:30:00Z`, fractions allowed).
enum QueryTimeParser {
    static let unitMs: [Character: Int64] = ["s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000]

    static func parse(_ text: String) -> QueryTime? {
        if let unit = text.last.flatMap({ unitMs[$0] }), text.utf8.dropLast().allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let n = Int64(text.dropLast())
        {
            // An age past what milliseconds hold is refused, not wrapped.
            let (ms, overflow) = n.multipliedReportingOverflow(by: unit)
            return overflow ? nil : .ago(milliseconds: ms)
        }
        if text.utf8.count == 10, let date = dateFormatter.date(from: text) { return milliseconds(date).map { .at(milliseconds: $0) } }
        for formatter in [instantFormatter, fractionalInstantFormatter] {
            if let date = formatter.date(from: text) { return milliseconds(date).map { .at(milliseconds: $0) } }
        }
        return nil
    }

    /// A Double becomes an integer only within range: a formatter's idea of a far year must
    /// not trap.
    private static func milliseconds(_ date: Date) -> Int64? {
        let ms = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard ms.isFinite, abs(ms) < 0x1p62 else { return nil }
        return Int64(ms)
    }

    // Made per parse: a query holds a handful of times, and a formatter is not Sendable.
    private static var dateFormatter: ISO8601DateFormatter {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withFullDate, .withDashSeparatorInDate]
        f.timeZone = TimeZone(identifier: "UTC")
        return f
    }
    private static var instantFormatter: ISO8601DateFormatter { ISO8601DateFormatter() }
    private static var fractionalInstantFormatter: ISO8601DateFormatter {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }
}
