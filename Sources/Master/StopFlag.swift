import Foundation

/// A flag set once (by SIGTERM/SIGINT or `--once` completion) and read by every worker slot.
final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var stoppedAt: Date?

    var isSet: Bool { lock.withLock { stoppedAt != nil } }
    var time: Date? { lock.withLock { stoppedAt } }

    func set() { lock.withLock { if stoppedAt == nil { stoppedAt = Date() } } }
}
