import Foundation
import Logging
import ReportModel

/// Builds the symcaches of uploaded debug files, one upload at a time, in a child process
/// (`stackline symbols reindex`): building parses all of a file's DWARF, which a client sent,
/// and a libdw crash or runaway there must cost that child, never the server. A build that
/// fails or is skipped costs nothing else: a worker builds the symcache when it first needs it.
public final class SymbolCacheIndexer: Sendable {
    /// The `stackline` executable and the store option it is run with.
    let executable: String
    let storeRoot: String
    /// Longest a build may take before the child is killed.
    let timeoutSeconds: Double
    let logger: Logger
    private let queue = DispatchQueue(label: "stackline.symcache-indexer")

    public init(executable: String, storeRoot: String, timeoutSeconds: Double = 600, logger: Logger) {
        self.executable = executable
        self.storeRoot = storeRoot
        self.timeoutSeconds = timeoutSeconds
        self.logger = logger
    }

    /// This process's own executable, for `executable`.
    public static var currentExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Queues a build of `ids`' symcaches (those not already usable) and returns at once.
    public func index(_ ids: [BuildID]) {
        guard !ids.isEmpty else { return }
        queue.async { [self] in run(ids) }
    }

    /// Waits until every queued build has finished (tests, shutdown).
    public func drain() { queue.sync {} }

    private func run(_ ids: [BuildID]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["symbols", "reindex", "--symbols", storeRoot, "--only-unusable", "--quiet"] + ids.map(\.hex)
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            logger.warning("cannot start the symcache build", metadata: ["error": "\(error)"])
            return
        }
        let killer = DispatchWorkItem { process.terminate() }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeoutSeconds, execute: killer)
        // Read before waiting: a child that fills the pipe would otherwise never exit.
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile().prefix(4096), as: UTF8.self)
        process.waitUntilExit()
        killer.cancel()
        if process.terminationStatus != 0 || process.terminationReason != .exit {
            logger.warning(
                "symcache build failed; workers build it when first needed",
                metadata: [
                    "buildIds": "\(ids.count)", "status": "\(process.terminationStatus)",
                    "error": "\(message.trimmingCharacters(in: .whitespacesAndNewlines))",
                ])
        }
    }
}
