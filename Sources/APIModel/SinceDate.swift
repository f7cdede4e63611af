import Foundation

/// `--since` (and `?since=`): a duration back from now (`7d`) or an absolute date.
public struct SinceDate: Sendable {
    public enum Value: Sendable {
        case ago(milliseconds: Int64)
        case at(milliseconds: Int64)
    }
    public let value: Value

    public init?(argument: String) {
        let units: [Character: Int64] = ["s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000]
        if let unit = argument.last.flatMap({ units[$0] }), let n = Int64(argument.dropLast()), n >= 0 {
            // 10^15 days does not fit in milliseconds: refuse it rather than trap.
            let (ms, overflow) = n.multipliedReportingOverflow(by: unit)
            guard !overflow else { return nil }
            value = .ago(milliseconds: ms)
            return
        }
        let day = DateFormatter()
        day.locale = Locale(identifier: "en_US_POSIX")
        day.timeZone = TimeZone(identifier: "UTC")
        day.dateFormat = "yyyy-MM-dd"
        if let date = ISO8601DateFormatter().date(from: argument) ?? day.date(from: argument) {
            value = .at(milliseconds: Int64(date.timeIntervalSince1970 * 1000))
            return
        }
        return nil
    }

    public func milliseconds(now: Int64) -> Int64 {
        switch value {
        case .ago(let ms): now - ms
        case .at(let ms): ms
        }
    }

    /// The same text read forward (`ignore --until 7d`): a duration from now, or the date.
    public func millisecondsAhead(now: Int64) -> Int64 {
        switch value {
        case .ago(let ms): now.addingReportingOverflow(ms).overflow ? .max : now + ms
        case .at(let ms): ms
        }
    }
}
