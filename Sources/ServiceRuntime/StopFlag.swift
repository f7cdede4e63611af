import Foundation
import Synchronization

/// A flag set once (by SIGTERM/SIGINT, `--once` completion or a refused remote worker) and read
/// by every worker slot, the master's and a remote worker's alike.
public final class StopFlag: Sendable {
    private let stoppedAt = Mutex<Date?>(nil)

    public init() {}

    public var isSet: Bool { stoppedAt.withLock { $0 != nil } }
    public var time: Date? { stoppedAt.withLock { $0 } }

    public func set() { stoppedAt.withLock { if $0 == nil { $0 = Date() } } }

    /// Sleeps until set or until `seconds` have passed, waking often enough to notice.
    public func wait(upTo seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while !isSet && Date() < deadline { Thread.sleep(forTimeInterval: min(0.1, max(0, deadline.timeIntervalSinceNow))) }
    }
}
