import DebugInfo
import Demangling
import Foundation

/// Names to demangle in the full style, handed over by the symcache builder as it meets them
/// and demangled on a thread of its own meanwhile, which also appends the results to a string
/// run of its own: for a Swift binary demangling the names is a large part of a build, and needs
/// nothing from the sweep but the names (`make bench`, symcache build). The caller of `finish()`
/// demangles beside the thread whatever is still queued, so neither core waits for the other.
// Sendable: `pending`, `taken`, `finished` and `started` under `condition`; the thread's results
// written only by it, and read by `finish()` after the thread signalled `done`.
final class DemanglingQueue: @unchecked Sendable {
    /// What one demangling thread made: the full names in a run of their own, and each name's
    /// index in it. The simplified style is not stored: the symcache derives it at lookup
    /// (`SymbolCache`), which took half the Swift demangling off a build (`make bench`, symcache
    /// build).
    struct Results {
        var full = StringRun()
        /// Each name's index in `full`, `Results.none` for a name this thread did not demangle.
        var names: AnswerStringArray<UInt32>
        static let none = UInt32.max

        /// `symbolCount`: how many symbol-table names may come, so their slots are made at once.
        init(symbolCount: Int) {
            names = AnswerStringArray(empty: Self.none, symbolCount: symbolCount)
        }
    }

    private let condition = NSCondition()
    private var pending: [(id: AnswerString, name: String)] = []
    /// How many of `pending` a thread has taken: the rest are still to do.
    private var taken = 0
    private var finished = false
    private var started = false
    private let symbolCount: Int
    private var results: Results
    private let done = DispatchSemaphore(value: 0)

    /// `symbolCount`: how many symbol-table names may come, so their slots are made at once.
    init(symbolCount: Int) {
        self.symbolCount = symbolCount
        results = Results(symbolCount: symbolCount)
    }

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
            Thread { [self] in
                demangleUntilDone(into: &results)
                done.signal()
            }.start()
        }
        if pending.count - taken >= Self.batch { condition.signal() }
    }

    private static let batch = 256

    /// Everything queued, demangled and interned: what is left is shared between the caller and
    /// the thread, then the thread is waited for. One `Results` per thread that made any.
    func finish() -> [Results] {
        condition.lock()
        finished = true
        let wasStarted = started
        condition.broadcast()
        condition.unlock()
        guard wasStarted else { return [] }
        var mine = Results(symbolCount: symbolCount)
        demangleUntilDone(into: &mine)
        done.wait()
        return [results, mine]
    }

    /// Full names are not interned: nearly all are distinct (each a whole signature), and
    /// hashing them cost more than the copies (`make bench`, symcache build).
    private func demangleUntilDone(into results: inout Results) {
        while let batch = take() {
            for (id, name) in batch {
                results.names[id] = results.full.append(Demangler.demangle(name, style: .full))
            }
        }
        results.full.finish()
    }

    /// The next batch, nil when there is none and none will come.
    private func take() -> [(id: AnswerString, name: String)]? {
        condition.lock()
        defer { condition.unlock() }
        while pending.count - taken < Self.batch && !finished { condition.wait() }
        guard taken < pending.count else { return nil }
        let end = min(taken + Self.batch, pending.count)
        // Copied out, so that `pending` stays unshared and the builder's next `add` appends in place.
        let batch = Array(pending[taken..<end])
        taken = end
        if taken == pending.count {
            pending.removeAll(keepingCapacity: true)
            taken = 0
        }
        return batch
    }
}
