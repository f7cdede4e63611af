import DebugInfo
import Demangling
import Foundation

/// Names to demangle in both styles, handed over by the symcache builder as it meets them and
/// demangled on a thread of its own meanwhile, which also interns the results into a string
/// table of its own: for a Swift binary demangling the names is a large part of a build, and
/// needs nothing from the sweep but the names (`make bench`, symcache build).
// Sendable: `pending`, `finished` and `started` under `condition`; `results` written only by the
// thread, and read by `finish()` after the thread signalled `done`.
final class DemanglingQueue: @unchecked Sendable {
    /// What the thread made: the full names and the simplified ones in runs of their own (a
    /// lookup prints one style, and decompresses only that style's blocks), and for each name
    /// the indexes of its two forms in them.
    struct Results {
        var full = StringRun()
        var simplified = StringRun()
        var names: [AnswerString: (full: UInt32, simplified: UInt32)] = [:]
    }

    private let condition = NSCondition()
    private var pending: [(id: AnswerString, name: String)] = []
    private var finished = false
    private var started = false
    private var results = Results()
    private let done = DispatchSemaphore(value: 0)

    /// Queues `name`, known to the caller as `id`.
    func add(_ id: AnswerString, _ name: String) {
        add(contentsOf: [(id, name)])
    }

    func add(contentsOf names: [(id: AnswerString, name: String)]) {
        guard !names.isEmpty else { return }
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

    /// Everything queued, demangled and interned: waits for the thread.
    func finish() -> Results {
        condition.lock()
        finished = true
        let wasStarted = started
        condition.broadcast()
        condition.unlock()
        guard wasStarted else { return Results() }
        done.wait()
        return results
    }

    private func run() {
        var byValue: [String: UInt32] = [:]
        while let batch = take() {
            for (id, name) in batch {
                // Full names are nearly all distinct (each a whole signature), so only the short
                // forms are looked up for a copy made already: hashing every full name was most
                // of the interning's cost.
                let full = results.full.append(Demangler.demangle(name, style: .full))
                let short = Demangler.demangle(name, style: .simplified)
                let simplified: UInt32
                if let known = byValue[short] {
                    simplified = known
                } else {
                    simplified = results.simplified.append(short)
                    byValue[short] = simplified
                }
                results.names[id] = (full, simplified)
            }
        }
        results.full.finish()
        results.simplified.finish()
        done.signal()
    }

    /// The next batch, nil when there is none and none will come.
    private func take() -> [(id: AnswerString, name: String)]? {
        condition.lock()
        defer { condition.unlock() }
        while pending.count < Self.batch && !finished { condition.wait() }
        guard !pending.isEmpty else { return nil }
        let batch = pending
        pending = []
        return batch
    }
}
