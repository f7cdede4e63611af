import Alerts
import Foundation
import ReportModel
import ServiceRuntime
import Testing

/// The spike's median, the backoff schedule, the version order and the body renderers.
@Suite struct AlertMathTests {
    @Test func medianCountsZeroHours() {
        #expect(SpikeMath.median([]) == 0)
        #expect(SpikeMath.median([5]) == 5)
        #expect(SpikeMath.median([3, 1, 2]) == 2)
        #expect(SpikeMath.median([4, 1, 3, 2]) == 2.5)
        // Seen in 3 of 168 hours: the median hour had none.
        var week = Array(repeating: 0, count: 165)
        week += [40, 50, 60]
        #expect(SpikeMath.median(week) == 0)
        // Seen in 100 of 168 hours, 2 a time.
        #expect(SpikeMath.median(Array(repeating: 2, count: 100) + Array(repeating: 0, count: 68)) == 2)
    }

    @Test func baselineFillsEmptyBuckets() {
        let hour: Int64 = 3_600_000
        let start = 1000 * hour
        let known: [Int64: Int] = [start - hour: 4, start - 3 * hour: 1, start: 99, start - 5 * hour: 7]
        // The 4 hours before `start`, oldest first; `start` itself and older buckets are not in it.
        #expect(SpikeMath.baseline(before: start, buckets: 4, bucketMs: hour, known: known) == [0, 1, 0, 4])
    }

    @Test func spikeNeedsBothTheMinimumAndTheMultiple() {
        let quiet = Array(repeating: 0, count: 168)
        #expect(SpikeMath.isSpike(count: 10, baseline: quiet, multiplier: 3, minCount: 10))
        #expect(!SpikeMath.isSpike(count: 9, baseline: quiet, multiplier: 3, minCount: 10))
        let busy = Array(repeating: 5, count: 168)
        #expect(!SpikeMath.isSpike(count: 15, baseline: busy, multiplier: 3, minCount: 10))  // not more than 3 × 5
        #expect(SpikeMath.isSpike(count: 16, baseline: busy, multiplier: 3, minCount: 10))
    }

    @Test func backoffDoublesToTheCap() {
        let backoff = Backoff(initialMs: 1000, maxMs: 10_000, jitter: DeliveryPolicy.jitter)
        #expect((1...6).map { backoff.baseDelay(afterAttempt: $0) } == [1000, 2000, 4000, 8000, 10_000, 10_000])
        #expect(backoff.baseDelay(afterAttempt: 500) == 10_000)
        // Jitter takes at most a fifth off.
        #expect(backoff.delay(afterAttempt: 3, random: 0) == 4000)
        #expect(backoff.delay(afterAttempt: 3, random: 0.5) == 3600)
        #expect(backoff.delay(afterAttempt: 3, random: 0.999_999) > 3200)
        #expect(Backoff(initialMs: Int64.max / 2, maxMs: Int64.max, jitter: DeliveryPolicy.jitter).baseDelay(afterAttempt: 40) == Int64.max)
    }

    @Test func versionsOrderNumerically() {
        let sorted = ["1.10", "1.9", "2.0", "1.9.1", "1.0", "1", "10.0", "1.0-beta"].sorted(by: VersionOrder.less)
        #expect(sorted == ["1", "1.0", "1.0-beta", "1.9", "1.9.1", "1.10", "2.0", "10.0"])
        #expect(VersionOrder.less("", "0.1"))
        #expect(VersionOrder.compare("3.2", "3.2") == 0)
    }

    func event(title: String) -> AlertEvent {
        AlertEvent(
            id: 7, rule: "r", severity: "critical", kind: "new_group", fingerprint: "ab", groupKind: "crash", title: title, app: "A",
            version: "1.0", counts: AlertCounts(total: 3, version: 3), firstSeen: "2026-01-01T00:00:00Z", lastSeen: "2026-01-01T00:00:00Z",
            link: "https://s.example/groups/ab", summary: "New crash group in A 1.0: \(title) (3 reports)")
    }

    @Test func templatesEscapeReportText() throws {
        let hostile = "\"}, \"x\": \"<script>\n"
        let body = WebhookTemplate.render(#"{"text": "{{title}}", "n": {{count}}, "id": {{id}}, "e": {{event}}}"#, event(title: hostile))
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        #expect(object["text"] as? String == hostile)
        #expect(object["n"] as? Int == 3)
        #expect(object["id"] as? Int == 7)
        #expect((object["e"] as? [String: Any])?["title"] as? String == hostile)
        #expect(object["x"] == nil)
    }

    @Test func presetsHaveEachToolsShape() throws {
        let e = event(title: "Fatal error: Index out of range")
        func object(_ p: WebhookPreset) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: WebhookTemplate.preset(p, e)) as? [String: Any])
        }
        let expected = "[CRITICAL] New crash group in A 1.0: Fatal error: Index out of range (3 reports)\nhttps://s.example/groups/ab"
        #expect(try object(.slack)["text"] as? String == expected)
        #expect(try object(.dingtalk)["msgtype"] as? String == "text")
        #expect((try object(.dingtalk)["text"] as? [String: Any])?["content"] as? String == expected)
        #expect(try object(.feishu)["msg_type"] as? String == "text")
        #expect((try object(.feishu)["content"] as? [String: Any])?["text"] as? String == expected)
        #expect(try object(.wecom)["msgtype"] as? String == "text")
        #expect((try object(.wecom)["text"] as? [String: Any])?["content"] as? String == expected)
    }

    @Test func eventJSONRoundTrips() throws {
        let e = event(title: "t")
        #expect(try AlertEvent.decode(String(decoding: e.json(), as: UTF8.self)) == e)
    }
}
