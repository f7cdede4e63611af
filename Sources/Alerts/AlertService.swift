import Foundation
import Storage
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// The alerts of `stackline serve`: a ServiceLifecycle service beside the master. Every
/// `pollSeconds` it evaluates the rules on the results stored since its cursor (kept in the
/// database, moved in the transaction that records the events), then sends the deliveries that
/// are due. It never touches the master's path: it only reads results and groups, and writes
/// its own tables. Stopping it at any point loses nothing and repeats nothing but a delivery
/// whose answer was not recorded yet (docs/alerts.md, "Retries and dedupe").
public final class AlertService: Service, Sendable {
    let db: any SQLStore
    let configuration: AlertConfiguration
    let evaluator: RuleEvaluator
    let delivery: AlertDelivery
    let logger: Logger
    /// Results read per evaluation step.
    let batch: Int
    /// Database calls block (a write waits for the master's writer, up to the busy timeout), so
    /// they run here, never on Swift concurrency's few cooperative threads, which the HTTP
    /// routes share.
    private let queue = DispatchQueue(label: "stackline.alerts.db")
    /// This process, as the alerts' lease names it (`Singleton.alerts`).
    let node: NodeIdentity
    /// Whether the last pass held the lease: a change is logged once.
    private let held = Mutex(false)

    public init(
        db: any SQLStore, configuration: AlertConfiguration, logger: Logger, batch: Int = 1000, node: NodeIdentity = .current
    ) {
        self.db = db
        self.node = node
        self.configuration = configuration
        self.evaluator = RuleEvaluator(configuration: configuration)
        self.delivery = AlertDelivery()
        self.logger = logger
        self.batch = batch
    }

    public func run() async throws {
        logger.info(
            "alerts started",
            metadata: ["rules": "\(configuration.rules.count)", "targets": "\(configuration.targets.count)"])
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.pass()
                try? await Task.sleep(for: .milliseconds(Int64(self.configuration.pollSeconds * 1000)))
            }
        }
        // A clean stop hands the work to another node at its next pass.
        let (db, node) = (db, node)
        try? await onQueue { try db.release(.alerts, for: node) }
        logger.info("alerts stopped")
    }

    /// How long this node's hold on the alerts outlives its last pass: a few polls, so a slow
    /// pass does not lose it, and a dead node's work is taken over within seconds.
    var leaseMs: Int64 { Int64(max(10, configuration.pollSeconds * 3) * 1000) }

    /// One evaluation and one delivery pass, by the one node that holds the alerts
    /// (`Singleton.alerts`); errors are logged and the next pass tries again.
    func pass() async {
        let (db, node, leaseMs) = (db, node, leaseMs)
        do {
            let holds = try await onQueue { try db.hold(.alerts, for: node, ttlMs: leaseMs) }
            if held.withLock({ was in defer { was = holds }; return was != holds }) {
                logger.notice(holds ? "this node evaluates the alert rules" : "another node evaluates the alert rules")
            }
            guard holds else { return }
        } catch let error as StorageError where error.isUnavailable {
            // Said once per outage by the store's callers already (readyz, the slots); at every poll it would drown the log.
            logger.debug("alert lease: database unavailable", metadata: ["error": "\(error)"])
            return
        } catch {
            logger.error("alert lease failed", metadata: ["error": "\(error)"])
            return
        }
        do { try await onQueue { try self.evaluate() } } catch {
            logger.error("alert evaluation failed", metadata: ["error": "\(error)"])
        }
        do { try await deliverDue() } catch {
            logger.error("alert delivery pass failed", metadata: ["error": "\(error)"])
        }
    }

    /// Evaluates the rules on every result stored since the cursor, a batch at a time.
    public func evaluate() throws {
        var cursor = try db.alertCursor()
        // Results past the horizon may still have neighbours below them in transactions not yet
        // committed (`ResultPositions`): they wait for the next pass.
        let last = try db.alertHorizon()
        if cursor == nil {
            // First run on this database: what was stored before alerts were enabled is history, not news.
            try db.recordAlertEvents([], cursorFrom: nil, to: last)
            logger.info("alert cursor starts after the stored results", metadata: ["position": "\(last)"])
            cursor = last
        }
        guard var position = cursor else { return }
        if position > last {
            // Positions are SQLite's result rowids, which a full VACUUM may renumber lower. Start again from the end.
            logger.warning("alert cursor is past the last result; moved back to it", metadata: ["cursor": "\(position)", "last": "\(last)"])
            try db.recordAlertEvents([], cursorFrom: position, to: last)
            position = last
        }
        while true {
            let (candidates, events) = try db.alertSnapshot { facts in
                let candidates = try facts.candidates(after: position, through: last, limit: batch)
                return (candidates, try evaluator.events(facts: facts, cursor: position, candidates: candidates))
            }
            guard let next = candidates.last?.position else { return }
            let inserted = try db.recordAlertEvents(events, cursorFrom: position, to: next)
            for (id, event) in inserted {
                logger.notice(
                    "alert raised",
                    metadata: ["event": "\(id)", "rule": "\(event.rule)", "kind": "\(event.kind)",
                               "group": "\(event.fingerprint.prefix(16))", "scope": "\(event.scope)"])
            }
            if !inserted.isEmpty { Counter(label: "stackline_alert_events_total").increment(by: inserted.count) }
            position = next
            if candidates.count < batch { return }
        }
    }

    /// Sends every delivery that is due, several at once.
    public func deliverDue() async throws {
        let longest = configuration.targets.values.map { target -> Double in
            switch target {
            case .webhook(let w): w.timeoutSeconds
            case .email(let e): e.timeoutSeconds
            }
        }.max() ?? 30
        while true {
            // The lease outlasts the slowest send, so no other pass takes a delivery in flight.
            let db = self.db
            let jobs = try await onQueue { try db.takeDueAlertDeliveries(limit: 8, leaseMs: Int64((longest + 60) * 1000)) }
            guard !jobs.isEmpty else { return }
            await withTaskGroup(of: Void.self) { group in
                for job in jobs {
                    group.addTask { await self.deliver(job) }
                }
            }
            if Task.isCancelled { return }
        }
    }

    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Sends the stored event to the job's target, as the rules file now describes the target.
    private func attempt(_ job: AlertDeliveryJob) async -> Result<Void, DeliveryError> {
        guard let target = configuration.targets[job.target] else {
            return .failure(DeliveryError("no target named \(job.target) in the rules file any more"))
        }
        guard var event = try? AlertEvent.decode(job.payload) else {
            return .failure(DeliveryError("the stored event is unreadable"))
        }
        event.id = job.eventId
        do {
            try await delivery.send(event, to: target)
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    private func deliver(_ job: AlertDeliveryJob) async {
        let meta: Logger.Metadata = ["event": "\(job.eventId)", "rule": "\(job.rule)", "target": "\(job.target)", "attempt": "\(job.attempts)"]
        let outcome = await attempt(job)
        let db = self.db
        do {
            switch outcome {
            case .success:
                try await onQueue { try db.alertDelivered(job.id) }
                Counter(label: "stackline_alerts_sent_total", dimensions: [("target", job.target)]).increment()
                logger.notice("alert delivered", metadata: meta)
            case .failure(let error):
                let reason = configuration.scrub(error.description)
                let giveUp = job.attempts >= configuration.delivery.maxAttempts || configuration.targets[job.target] == nil
                let retryAt: Int64? = giveUp
                    ? nil
                    : db.now() + configuration.delivery.backoff.delay(afterAttempt: job.attempts)
                try await onQueue { try db.alertDeliveryFailed(job.id, error: reason, retryAt: retryAt) }
                Counter(label: "stackline_alerts_failed_total", dimensions: [("target", job.target), ("final", giveUp ? "true" : "false")])
                    .increment()
                var failed = meta
                failed["error"] = "\(reason)"
                if let retryAt { failed["retry_in_ms"] = "\(retryAt - db.now())" }
                logger.warning(giveUp ? "alert delivery gave up" : "alert delivery failed", metadata: failed)
            }
        } catch {
            logger.error("cannot record an alert delivery", metadata: meta.merging(["error": "\(error)"]) { $1 })
        }
    }
}

