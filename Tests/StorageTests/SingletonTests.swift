import Foundation
import Storage
import TestSupport
import Testing

/// The work one node at a time does (`Singleton`): the lease passes only when its holder lets
/// it run out or gives it up, on both backends, as two nodes (two connections) see it.
@Suite struct SingletonTests {
    @Test(arguments: Backend.allCases) func oneNodeHoldsUntilItsLeaseRunsOutOrItLetsGo(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let other = try f.another()
        let a = NodeIdentity(name: "node-a"), b = NodeIdentity(name: "node-b")
        f.clock.advance(milliseconds: 1_000_000)

        #expect(try f.store.hold(.alerts, for: a, ttlMs: 10_000))
        #expect(try !other.hold(.alerts, for: b, ttlMs: 10_000))
        // Another singleton is another lease.
        #expect(try other.hold(.retention, for: b, ttlMs: 10_000))
        // The holder renews; at the old expiry the other node still waits.
        f.clock.advance(milliseconds: 9_000)
        #expect(try f.store.hold(.alerts, for: a, ttlMs: 10_000))
        f.clock.advance(milliseconds: 2_000)
        #expect(try !other.hold(.alerts, for: b, ttlMs: 10_000))
        #expect(try other.holder(of: .alerts) == "node-a")
        // a stops renewing (it died): once its lease has run out, b takes over, and a is out.
        f.clock.advance(milliseconds: 8_001)
        #expect(try other.hold(.alerts, for: b, ttlMs: 10_000))
        #expect(try !f.store.hold(.alerts, for: a, ttlMs: 10_000))
        #expect(try f.sql("SELECT holder FROM singletons WHERE name = 'alerts'").first?["holder"] as? String == "node-b")
        // A clean stop hands over at once; releasing what another holds changes nothing.
        try f.store.release(.alerts, for: a)
        #expect(try other.holder(of: .alerts) == "node-b")
        try other.release(.alerts, for: b)
        #expect(try other.holder(of: .alerts) == nil)
        #expect(try f.store.hold(.alerts, for: a, ttlMs: 10_000))
        #expect(try f.sqlInt("SELECT COUNT(*) FROM singletons") == 2)
    }
}
