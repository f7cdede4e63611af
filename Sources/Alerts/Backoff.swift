import Storage

/// Exponential backoff between delivery attempts: the wait doubles after every failed
/// attempt up to a cap, less up to a fifth at random, so deliveries that failed together (a
/// receiver that was down) do not all come back in the same instant.
public struct Backoff: Sendable, Equatable {
    public var initialMs: Int64
    public var maxMs: Int64

    public init(initialMs: Int64, maxMs: Int64) {
        self.initialMs = max(1, initialMs)
        self.maxMs = max(self.initialMs, maxMs)
    }

    /// The wait before the attempt after failed attempt number `attempt` (1 is the first),
    /// before jitter: `initial × 2^(attempt−1)`, at most `max`.
    public func baseDelay(afterAttempt attempt: Int) -> Int64 {
        RetryPolicy.doubling(initialMs: initialMs, maxMs: maxMs, afterAttempt: attempt)
    }

    /// The wait with jitter: `random` in [0, 1) takes up to a fifth off the base delay.
    public func delay(afterAttempt attempt: Int, random: Double) -> Int64 {
        let base = baseDelay(afterAttempt: attempt)
        let cut = Int64((Double(base) * 0.2 * min(max(random, 0), 1)).rounded(.down))
        return max(1, base - cut)
    }
}
