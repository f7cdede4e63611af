import Foundation

/// A flag set once (by SIGTERM/SIGINT, `--once` completion or a refused remote worker) and read
/// by every worker slot, the master's and a remote worker's alike.
/// Sendable: `lock` guards `stoppedAt`.
public final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var stoppedAt: Date?

    public init() {}

    public var isSet: Bool { lock.withLock { stoppedAt != nil } }
    public var time: Date? { lock.withLock { stoppedAt } }

    public func set() { lock.withLock { if stoppedAt == nil { stoppedAt = Date() } } }

    /// Sleeps until set or until `seconds` have passed, waking often enough to notice.
    public func wait(upTo seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while !isSet && Date() < deadline { Thread.sleep(forTimeInterval: min(0.1, max(0, deadline.timeIntervalSinceNow))) }
    }
}
