/// The one retry schedule of Stackline: job retries (`RetryPolicy`), alert deliveries and a
/// remote worker's reconnects, claims and result deliveries. The wait after failed attempt `n`
/// is the capped exponential step `initial × 2^(n−1)` (at most `max`) times a share of it drawn
/// uniformly from `jitter` (in percent), so clients that failed together (a master or a receiver
/// that was down) do not all come back in the same instant.
///
/// `fullJitter` (0...100) is "full jitter" as the AWS Architecture Blog defines it: uniform in
/// [0, capped step]. The others keep each user's schedule: alert deliveries take up to a fifth
/// off (80...100), job retries add up to half (100...150). Percent rather than a fraction, so
/// 80...100 is exactly a fifth wide (1 − 0.8 is not 0.2 in binary).
public struct Backoff: Sendable, Equatable {
    public var initialMs: Int64
    public var maxMs: Int64
    /// The share of the step each wait is, in percent, drawn uniformly from this range.
    public var jitter: ClosedRange<Int>

    /// Uniform in [0, capped step].
    public static let fullJitter: ClosedRange<Int> = 0...100

    public init(initialMs: Int64, maxMs: Int64, jitter: ClosedRange<Int>) {
        self.initialMs = max(0, initialMs)
        self.maxMs = max(self.initialMs, maxMs)
        self.jitter = max(0, jitter.lowerBound)...max(0, jitter.upperBound)
    }

    /// The step after failed attempt `attempt` (1 is the first), before jitter:
    /// `initial × 2^(attempt−1)`, at most `max`. Past the cap it stays there instead of overflowing.
    public func baseDelay(afterAttempt attempt: Int) -> Int64 {
        let doublings = max(0, attempt - 1)
        guard doublings < 62, initialMs <= maxMs >> Int64(doublings) else { return maxMs }
        return initialMs << Int64(doublings)
    }

    /// The wait after failed attempt `attempt`: `random` in [0, 1] picks the share, from the
    /// top of `jitter` (0) down to its bottom (1):
    /// `step × upper/100 − ⌊step × (upper − lower)/100 × random⌋`.
    public func delay(afterAttempt attempt: Int, random: Double) -> Int64 {
        let step = baseDelay(afterAttempt: attempt)
        let u = min(max(random, 0), 1)
        let top = Self.percent(Int64(jitter.upperBound), of: step)
        let width = Double(jitter.upperBound - jitter.lowerBound)
        let cut = (Double(step) * width * u / 100).rounded(.down)
        // The cut is at most `top` (the range's width is at most its top); checked in floating
        // point first, as Int64(_:) traps at 2^63.
        guard cut < Double(top) else { return 0 }
        return top - Int64(cut)
    }

    /// `step × percent / 100`, saturating at Int64.max.
    private static func percent(_ percent: Int64, of step: Int64) -> Int64 {
        let (product, overflow) = step.multipliedReportingOverflow(by: percent)
        if !overflow { return product / 100 }
        let (coarse, overflowAgain) = (step / 100).multipliedReportingOverflow(by: percent)
        return overflowAgain ? Int64.max : coarse
    }

    /// The wait after failed attempt `attempt`, its factor drawn from `generator`.
    public func delay<G: RandomNumberGenerator>(afterAttempt attempt: Int, using generator: inout G) -> Int64 {
        delay(afterAttempt: attempt, random: Double.random(in: 0...1, using: &generator))
    }

    /// The wait after failed attempt `attempt`, its factor drawn from the system's generator.
    public func delay(afterAttempt attempt: Int) -> Int64 {
        var generator = SystemRandomNumberGenerator()
        return delay(afterAttempt: attempt, using: &generator)
    }

    /// Successive waits in seconds for a loop that retries until it succeeds: the first call is
    /// the wait after the first failure. A new `Waits` starts again from `initial`.
    public struct Waits: Sendable {
        public let backoff: Backoff
        private var failures = 0

        public init(_ backoff: Backoff) { self.backoff = backoff }

        public mutating func next() -> Double {
            failures = min(failures + 1, 64)
            return Double(backoff.delay(afterAttempt: failures)) / 1000
        }
    }
}
