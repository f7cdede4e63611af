import Foundation
import NIOPosix

/// The one way a route handler or middleware runs blocking work: every SQLite call, disk read
/// or write, inflate, AES, parse and wait on a child process they make goes through `run`, on
/// a thread pool of its own (swift-nio's `NIOThreadPool`). BlockingWorkTests fails on a database
/// or inflate call in Sources/Server outside a `blocking.run` closure.
///
/// Handlers run on Swift's cooperative pool (one thread per core) and answer through the event
/// loops; a thread of either that waits on the disk or spends seconds on a bomb holds up every
/// other request, `/healthz` included (issue 28, F4: two batches of bombs made it take 5.9 s).
/// Work here waits in the pool's queue instead, and the threads that accept, read and answer
/// requests stay free.
///
/// One pool per process (`shared`): `deps.blocking`, and what the middleware was given.
/// Its size, `defaultThreads`: twice the cores, at least 8. The work is a mix of CPU (inflate,
/// parse, bounded per request by its budgets) and waits (SQLite's lock, the disk, an on-the-spot
/// symbolication's worker, up to `--symbolicate-timeout`), so more threads than cores keep a
/// few slow waits from queueing the fast reads behind them; the CPU part is bounded by the
/// request budgets, not by the pool.
public final class BlockingWork: Sendable {
    /// Threads of `shared`: 2 × cores, at least 8.
    public static let defaultThreads = max(8, 2 * ProcessInfo.processInfo.activeProcessorCount)
    /// The process's pool, started on first use and never stopped (as `NIOThreadPool.singleton`).
    public static let shared = BlockingWork(threads: defaultThreads)

    private let threadPool: NIOThreadPool
    public let threads: Int

    public init(threads: Int) {
        self.threads = max(1, threads)
        threadPool = NIOThreadPool(numberOfThreads: self.threads)
        threadPool.start()
    }

    /// Runs `work` on one of the pool's threads and returns what it returns (or throws what it
    /// throws). The calling task waits without holding a thread.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await threadPool.runIfActive(work)
    }
}
