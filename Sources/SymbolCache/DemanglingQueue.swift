import DebugInfo
import Demangling
import Foundation

/// Names to demangle in both styles, handed over by the symcache builder as it meets them and
/// demangled on a thread of its own meanwhile, which also interns the results into string runs
/// of its own: for a Swift binary demangling the names is a large part of a build, and needs
/// nothing from the sweep but the names (`make bench`, symcache build). The caller of `finish()`
/// demangles beside the thread whatever is still queued, so neither core waits for the other.
// Sendable: `pending`, `taken`, `finished` and `started` under `condition`; the thread's results
// written only by it, and read by `finish()` after the thread signalled `done`.
final class DemanglingQueue: @unchecked Sendable {
    /// What one demangling thread made: the full names and the simplified ones in runs of their
    /// own (a lookup prints one style, and decompresses only that style's blocks), and for each
    /// name the indexes of its two forms in them.
    struct Results {
        var full = StringRun()
        var simplified = StringRun()
        /// Each name's two indexes, `Results.none` for a name this thread did not demangle.
        var names: AnswerStringArray<(full: UInt32, simplified: UInt32)>
        static let none = (full: UInt32.max, simplified: UInt32.max)

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
                demangleUntilDone(into: &results, expecting: symbolCount)
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
        demangleUntilDone(into: &mine, expecting: 0)
        done.wait()
        return [results, mine]
    }

    private func demangleUntilDone(into results: inout Results, expecting count: Int) {
        var byValue: [String: UInt32] = [:]
        // Made its full size at once: growing it rehashed every name so far, each time.
        byValue.reserveCapacity(count)
        while let batch = take() {
            for (id, name) in batch {
                // Full names are nearly all distinct (each a whole signature), so only the short
                // forms are looked up for a copy made already: hashing every full name was most
                // of the interning's cost.
                let (fullName, short) = Demangler.demangleBothStyles(name)
                let full = results.full.append(fullName)
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
