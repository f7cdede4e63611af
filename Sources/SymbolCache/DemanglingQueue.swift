import DebugInfo
import Demangling
import Foundation

/// Names to demangle in both styles, handed over by the symcache builder's sweep as it meets
/// them and demangled on a thread of its own meanwhile: for a Swift binary demangling costs
/// about as much as the sweep, and needs nothing from it but the names (`make bench`,
/// symcache build). `finish()` demangles what is still waiting on the caller's thread too,
/// then returns every name's results.
final class DemanglingQueue: @unchecked Sendable {
    // Everything below is read and written under `condition`.
    private let condition = NSCondition()
    private var pending: [(id: AnswerString, name: String)] = []
    private var finished = false
    /// Batches taken and not yet stored back.
    private var inFlight = 0
    private var results: [(id: AnswerString, full: String, simplified: String)] = []
    private var started = false

    /// Queues `name`, known to the caller as `id`.
    func add(_ id: AnswerString, _ name: String) {
        add(contentsOf: [(id, name)])
    }

    func add(contentsOf names: [(id: AnswerString, name: String)]) {
        condition.lock()
        defer { condition.unlock() }
        pending += names
        if !started {
            started = true
            Thread { [self] in run() }.start()
        }
        if pending.count >= Self.batch { condition.signal() }
    }

    private static let batch = 256

    /// Everything queued, demangled: waits for the thread's last batch.
    func finish() -> [(id: AnswerString, full: String, simplified: String)] {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
        // The caller takes batches too, until none is left.
        while let batch = take(waiting: false) { store(Self.demangle(batch)) }
        condition.lock()
        while inFlight > 0 { condition.wait() }
        let out = results
        condition.unlock()
        return out
    }

    private func run() {
        while let batch = take(waiting: true) { store(Self.demangle(batch)) }
    }

    /// The next batch, nil when there is none and (when `waiting`) none will come.
    private func take(waiting: Bool) -> [(id: AnswerString, name: String)]? {
        condition.lock()
        defer { condition.unlock() }
        while waiting && pending.count < Self.batch && !finished { condition.wait() }
        guard !pending.isEmpty else { return nil }
        let batch = Array(pending.suffix(Self.batch))
        pending.removeLast(batch.count)
        inFlight += 1
        return batch
    }

    private func store(_ done: [(id: AnswerString, full: String, simplified: String)]) {
        condition.lock()
        results += done
        inFlight -= 1
        condition.broadcast()
        condition.unlock()
    }

    private static func demangle(_ batch: [(id: AnswerString, name: String)]) -> [(id: AnswerString, full: String, simplified: String)] {
        batch.map { ($0.id, Demangler.demangle($0.name, style: .full), Demangler.demangle($0.name, style: .simplified)) }
    }
}
