import Foundation
import ReportModel

/// What `FetchedDebugFiles.ensure` found for one job, and the hold it keeps: the cached files
/// of `pinned` are never evicted until `release()` (a child process is symbolicating with them).
///
/// Keep the pin for the whole job and call `release()` when the job's reply is in. Releasing
/// twice does nothing; a pin dropped without `release()` releases itself when it is freed.
/// Sendable: the id lists are immutable; `lock` guards `unpin`.
public final class FetchPin: @unchecked Sendable {
    /// In the cache and pinned.
    public let pinned: [BuildID]
    /// In one of the local stores (`--symbols`): used from there, never fetched.
    public let local: [BuildID]
    /// Neither: the server lacks them (remembered for a while), sent a wrong file, or could
    /// not be reached (see `errors`).
    public let missing: [BuildID]
    /// Why each missing id is missing, when this call (or the fetch it waited for) learned why.
    public let errors: [BuildID: SymbolFetchError]
    /// What each source said about an id when this call asked it (ids answered from the cache,
    /// from a remembered miss, or by another caller's download are absent).
    public let answers: [BuildID: [SymbolSourceAnswer]]

    private let lock = NSLock()
    private var unpin: (([BuildID]) -> Void)?

    init(
        pinned: [BuildID], local: [BuildID], missing: [BuildID], errors: [BuildID: SymbolFetchError],
        answers: [BuildID: [SymbolSourceAnswer]], unpin: @escaping ([BuildID]) -> Void
    ) {
        self.pinned = pinned
        self.local = local
        self.missing = missing
        self.errors = errors
        self.answers = answers
        self.unpin = unpin
    }

    /// Lets the cache evict the pinned files again.
    public func release() {
        let unpin = lock.withLock { () -> (([BuildID]) -> Void)? in
            defer { self.unpin = nil }
            return self.unpin
        }
        unpin?(pinned)
    }

    deinit { release() }
}
