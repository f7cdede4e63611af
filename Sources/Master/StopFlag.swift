import Foundation

/// A flag set once (by SIGTERM/SIGINT or `--once` completion) and read by every worker slot.
final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var stoppedAt: Date?

    var isSet: Bool { lock.withLock { stoppedAt != nil } }
    var time: Date? { lock.withLock { stoppedAt } }

    func set() { lock.withLock { if stoppedAt == nil { stoppedAt = Date() } } }

    /// Sleeps until set or until `seconds` have passed, waking often enough to notice.
    func wait(upTo seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while !isSet && Date() < deadline { Thread.sleep(forTimeInterval: min(0.1, max(0, deadline.timeIntervalSinceNow))) }
    }
}
