import Foundation

/// A token bucket per key (an API token's id): `rate` requests per second on average, bursts of
/// up to `burst`. `POST /api/v1/reports` and `POST /api/v1/ingest` share one limiter for ingest
/// tokens, so a token's budget covers both.
public final class RateLimiter: Sendable {
    /// Requests per second; 0 or less turns the limit off.
    public let rate: Double
    public let burst: Double
    private let buckets = LockedDictionary<Int64, Bucket>()

    struct Bucket: Sendable {
        var tokens: Double
        var updated: TimeInterval
    }

    public init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = max(1, burst)
    }

    /// Takes one request from `key`'s budget; nil when allowed, else the seconds until it would be.
    public func take(_ key: Int64, now: TimeInterval = ProcessInfo.processInfo.systemUptime) -> Double? {
        guard rate > 0 else { return nil }
        return buckets.update(key) { bucket in
            var b = bucket ?? Bucket(tokens: burst, updated: now)
            b.tokens = min(burst, b.tokens + (now - b.updated) * rate)
            b.updated = now
            if b.tokens >= 1 {
                b.tokens -= 1
                return (b, nil)
            }
            return (b, (1 - b.tokens) / rate)
        }
    }

    /// Throws 429 (with `Retry-After`) when `key` is over its budget.
    public func check(_ key: Int64) throws {
        if let wait = take(key) { throw APIError.rateLimited(retryAfter: wait) }
    }
}
