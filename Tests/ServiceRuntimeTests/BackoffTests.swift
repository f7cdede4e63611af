import ServiceRuntime
import TestSupport
import Testing

/// The one retry schedule. The oracle is the definition, computed here, with draws replayed from
/// a seeded generator: the step is `initial × 2^(n−1)` capped at `max`, and full jitter is
/// uniform in [0, step].
@Suite struct BackoffTests {
    /// The capped exponential step, by repeated doubling in this test's own arithmetic.
    static func step(initial: Int64, max cap: Int64, attempt: Int) -> Int64 {
        var step = initial
        for _ in 1..<max(1, attempt) {
            if step > cap / 2 { return cap }
            step *= 2
        }
        return min(step, cap)
    }

    @Test func stepsDoubleToTheCapWithoutOverflowing() {
        let backoff = Backoff(initialMs: 250, maxMs: 30_000, jitter: Backoff.fullJitter)
        for attempt in 1...80 {
            #expect(backoff.baseDelay(afterAttempt: attempt) == Self.step(initial: 250, max: 30_000, attempt: attempt), "attempt \(attempt)")
        }
        // A step near Int64.max times a factor over 1 saturates rather than trapping.
        let huge = Backoff(initialMs: Int64.max / 2, maxMs: Int64.max, jitter: 100...150)
        #expect(huge.delay(afterAttempt: 40, random: 0) == Int64.max)
    }

    /// Each draw, replayed from the same seed: `u` uniform in [0, 1] and the wait
    /// `step − ⌊step × u⌋`, which is uniform over [0, step] as `u` is over [0, 1].
    @Test func fullJitterIsTheDefinitionDrawForDraw() {
        let backoff = Backoff(initialMs: 250, maxMs: 30_000, jitter: Backoff.fullJitter)
        var generator = SeededGenerator(seed: 29)
        var replay = SeededGenerator(seed: 29)
        for attempt in 1...40 {
            let step = Self.step(initial: 250, max: 30_000, attempt: attempt)
            let u = Double.random(in: 0...1, using: &replay)
            let expected = step - Int64((Double(step) * u).rounded(.down))
            let wait = backoff.delay(afterAttempt: attempt, using: &generator)
            // Within a millisecond: the implementation scales by percent, this by the fraction.
            #expect(abs(wait - expected) <= 1, "attempt \(attempt): \(wait) against \(expected)")
            #expect(wait >= 0 && wait <= step)
        }
    }

    /// Full jitter spreads over the whole of [0, step], not its upper half (what the remote
    /// worker's "full jitter" did): 20,000 seeded draws in ten equal buckets, each near a tenth.
    @Test func fullJitterCoversTheWholeRangeEvenly() {
        let backoff = Backoff(initialMs: 1000, maxMs: 10_000, jitter: Backoff.fullJitter)
        let cap: Int64 = 10_000
        var generator = SeededGenerator(seed: 2026)
        var buckets = [Int](repeating: 0, count: 10)
        let draws = 20_000
        for _ in 0..<draws {
            let wait = backoff.delay(afterAttempt: 30, using: &generator)
            #expect(wait >= 0 && wait <= cap)
            buckets[min(9, Int(wait * 10 / (cap + 1)))] += 1
        }
        // Each bucket expects 2,000 (standard deviation about 42): 1,700...2,300 is seven of them.
        for (index, count) in buckets.enumerated() {
            #expect((1700...2300).contains(count), "bucket \(index): \(count) of \(draws)")
        }
    }

    /// The other schedules keep their shapes: alerts take up to a fifth off, job retries add up to half.
    @Test func partialJitterStaysInItsRange() {
        var generator = SeededGenerator(seed: 7)
        let alerts = Backoff(initialMs: 1000, maxMs: 60_000, jitter: 80...100)
        let retries = Backoff(initialMs: 1000, maxMs: 60_000, jitter: 100...150)
        for attempt in 1...10 {
            let step = Self.step(initial: 1000, max: 60_000, attempt: attempt)
            for _ in 0..<50 {
                let a = alerts.delay(afterAttempt: attempt, using: &generator)
                #expect(a >= step * 8 / 10 && a <= step)
                let r = retries.delay(afterAttempt: attempt, using: &generator)
                #expect(r >= step && r <= step + step / 2)
            }
        }
    }

    @Test func waitsStartOverAndStayUnderTheCap() {
        let backoff = Backoff(initialMs: 250, maxMs: 30_000, jitter: Backoff.fullJitter)
        var waits = Backoff.Waits(backoff)
        for attempt in 1...100 {
            let wait = waits.next()
            #expect(wait >= 0 && wait <= Double(Self.step(initial: 250, max: 30_000, attempt: attempt)) / 1000)
        }
    }
}
