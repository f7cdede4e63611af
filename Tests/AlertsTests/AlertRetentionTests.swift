import Foundation
import Storage
import TestSupport
import Testing

/// `prune` takes alert events raised before its cutoff with it, except one still being delivered.
@Suite struct AlertRetentionTests {
    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var ms: Int64 = 1_800_000_000_000
        var now: Int64 { lock.withLock { ms } }
        func advance(ms delta: Int64) { lock.withLock { ms += delta } }
    }

    func event(_ rule: String, scope: String) -> NewAlertEvent {
        NewAlertEvent(rule: rule, kind: "new_group", fingerprint: "fp-\(rule)", scope: scope, severity: "info", payload: "{}", targets: ["hook"])
    }

    @Test(arguments: Backend.allCases) func pruneDeletesOldSettledEventsAndKeepsPendingAndRecentOnes(_ backend: Backend) throws {
        let clock = Clock()
        let fixture = try AlertStoreFixture(backend, clock: { clock.now })
        defer { fixture.remove() }
        let db = fixture.store
        let old = try db.recordAlertEvents([event("delivered", scope: ""), event("failed", scope: ""), event("pending", scope: "")], cursorFrom: nil, to: 1)
        for job in try db.takeDueAlertDeliveries(limit: 10, leaseMs: 1) {
            switch job.rule {
            case "delivered": try db.alertDelivered(job.id)
            case "failed": try db.alertDeliveryFailed(job.id, error: "gave up", retryAt: nil)
            default: try db.alertDeliveryFailed(job.id, error: "500", retryAt: clock.now + 60_000)
            }
        }
        #expect(old.count == 3)
        clock.advance(ms: 10 * 86_400_000)
        _ = try db.recordAlertEvents([event("recent", scope: "")], cursorFrom: 1, to: 2)

        let outcome = try db.prune(PruneRequest(receivedBefore: clock.now - 86_400_000))
        #expect(outcome.alertEventsDeleted == 2)
        let left = try db.recentAlertEvents(limit: 10).map(\.rule).sorted()
        #expect(left == ["pending", "recent"])
        // The delivery of the pending one is still there to be retried.
        clock.advance(ms: 120_000)
        #expect(try db.takeDueAlertDeliveries(limit: 10, leaseMs: 1).map(\.rule).contains("pending"))
    }
}
