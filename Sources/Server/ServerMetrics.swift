import Foundation
import Storage
import Metrics
import Prometheus

/// The Prometheus registry behind swift-metrics. Stackline's metrics are created through the
/// swift-metrics API wherever they happen (Master counts jobs and workers, routes count
/// requests and reports); `/metrics` renders the registry.
public final class ServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry

    /// Bootstraps swift-metrics with a Prometheus factory (once per process).
    public static func bootstrap() -> ServerMetrics {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
            .seconds(5), .seconds(10), .seconds(30), .seconds(60),
        ]
        MetricsSystem.bootstrap(factory)
        return ServerMetrics(registry: registry)
    }

    init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    /// Prometheus text exposition, with the queue gauges set from `queueCounts` (the database's
    /// job counts by state, read by the caller on the blocking pool; nil leaves them as they were).
    public func render(queueCounts: [JobState: Int]?) -> String {
        if let counts = queueCounts {
            for state in JobState.allCases {
                Gauge(label: "stackline_queue_jobs", dimensions: [("state", state.rawValue)]).record(counts[state] ?? 0)
            }
        }
        return registry.emitToString()
    }

    /// A report stored by an ingest endpoint.
    public static func reportIngested(format: String, namespace: String?, duplicate: Bool) {
        Counter(
            label: "stackline_reports_ingested_total",
            dimensions: [("format", format), ("namespace", namespace ?? ""), ("duplicate", duplicate ? "true" : "false")]
        ).increment()
    }

    /// A report or request an ingest endpoint refused, by reason (`malformed`, `too_large`, `rate_limited`, …).
    public static func reportRefused(reason: String) {
        Counter(label: "stackline_reports_refused_total", dimensions: [("reason", reason)]).increment()
    }

    /// A debug file served (debuginfod and the like), by kind.
    public static func debugFileServed(kind: String) {
        Counter(label: "stackline_debug_files_served_total", dimensions: [("kind", kind)]).increment()
    }

    static func request(route: String, method: String, status: Int) {
        requestCounters.counter(for: RequestKey(route: route, method: method, status: status)) { key in
            Counter(
                label: "stackline_http_requests_total",
                dimensions: [("route", key.route), ("method", key.method), ("status", "\(key.status)")])
        }.increment()
    }

    struct RequestKey: Hashable, Sendable {
        var route: String
        var method: String
        var status: Int
    }

    /// Made once per route, method and status: creating a swift-metrics handle looks it up in
    /// the registry under a lock, which every request would otherwise pay.
    static let requestCounters = CounterCache<RequestKey>()
}

/// swift-metrics counters by key, created on first use.
/// Sendable: `lock` guards `counters`; swift-metrics counters are thread-safe.
final class CounterCache<Key: Hashable & Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var counters: [Key: Metrics.Counter] = [:]

    func counter(for key: Key, make: (Key) -> Metrics.Counter) -> Metrics.Counter {
        lock.withLock {
            if let counter = counters[key] { return counter }
            let counter = make(key)
            counters[key] = counter
            return counter
        }
    }
}
