import Synchronization

/// Answers of a pure function of a report's strings, kept for the life of the process and shared
/// by threads: a worker meets the same images and functions report after report, and working
/// them out again (fnmatch over every rule, normalising names) was most of grouping's cost.
///
/// Bounded, so hostile names cannot grow a long-lived worker without limit; emptied rather than
/// evicted one by one, since a worker's hot keys come straight back.
final class BoundedMemo<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let entries = Mutex<[Key: Value]>([:])
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    func value(for key: Key, compute: (Key) -> Value) -> Value {
        if let known = entries.withLock({ $0[key] }) { return known }
        let value = compute(key)
        entries.withLock { entries in
            if entries.count >= limit { entries.removeAll(keepingCapacity: true) }
            entries[key] = value
        }
        return value
    }
}
