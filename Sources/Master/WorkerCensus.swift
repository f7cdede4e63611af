import Foundation
import Metrics

/// How many worker processes are alive and how often they were restarted: `/readyz` needs one
/// connected worker, `/metrics` exports both (through swift-metrics, a no-op without a backend).
/// Sendable: `lock` guards the two counts; swift-metrics gauges and counters are thread-safe.
public final class WorkerCensus: @unchecked Sendable {
    private let lock = NSLock()
    private var live = 0
    private var restartCount = 0
    private let connectedGauge = Gauge(label: "stackline_workers_connected")
    private let restartsCounter = Counter(label: "stackline_worker_restarts_total")

    public init() {}

    /// Worker processes running now.
    public var connected: Int { lock.withLock { live } }
    /// Workers started again after one died or was killed.
    public var restarts: Int { lock.withLock { restartCount } }

    func started(isRestart: Bool) {
        let now = lock.withLock {
            live += 1
            if isRestart { restartCount += 1 }
            return live
        }
        if isRestart { restartsCounter.increment() }
        connectedGauge.record(now)
    }

    func stopped() {
        connectedGauge.record(lock.withLock {
            live -= 1
            return live
        })
    }
}
