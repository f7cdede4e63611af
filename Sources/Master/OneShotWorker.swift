#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
public import ReportModel
internal import ServiceRuntime
internal import WorkerProtocol

/// What one on-the-spot symbolication came to.
public enum OneShotOutcome: Sendable {
    case symbolicated(SymbolicatedReport)
    /// The worker could not parse the report (the parser's message).
    case inputError(String)
    /// The worker crashed, was killed, or answered nonsense; the report may be poison.
    case workerFailed(String)
    /// The worker did not answer in time and was killed.
    case timedOut(seconds: Double)
}

/// Symbolicates one report in a `stackline-worker` process of its own, outside the job queue
/// (`POST /api/v1/symbolicate`): whatever the report does to the worker (crash, hang, runaway
/// allocation), the caller's process only sees an outcome, and a hung worker is killed at the
/// deadline. The job's life is `WorkerSession`'s, as for queued jobs. Blocking: call it from a
/// thread that may block (the server's blocking-work pool), never an event loop or Swift's
/// cooperative pool.
public enum OneShotWorker {
    public static func symbolicate(
        raw: Data, format: String, executable: String, arguments: [String], timeout: Double
    ) -> OneShotOutcome {
        let session = WorkerSession(
            command: WorkerCommand(executable: executable, arguments: arguments), respawnPause: 0,
            logger: Logger(label: "stackline.symbolicate"))
        defer { session.stop(grace: 2) }
        do { try session.ensureStarted() } catch {
            return .workerFailed("\(error)")
        }
        let request = JobRequest(jobId: 0, reportId: 0, attempt: 1, format: format, raw: raw)
        let frame: Data
        do { frame = try request.encodedFrame() } catch .tooLarge(let size) {
            return .workerFailed(Framing.jobFrameTooLarge(size))
        } catch {
            return .workerFailed("\(error)")
        }
        switch session.send(frame) {
        case .sent: break
        case .tooLarge(let size): return .workerFailed(Framing.jobFrameTooLarge(size))
        case .lost(let how): return .workerFailed(how)
        }
        // Nothing to renew and nobody to hand jobs back to: only the deadline wakes it.
        switch session.awaitReply(to: request.jobId, timeout: timeout, checkEvery: timeout) {
        case .replied(let reply):
            switch reply.kind {
            case .result:
                guard let result = reply.result, var report = try? result.report() else {
                    return .workerFailed("worker reply has no readable report")
                }
                report.id = nil  // symbolicated on the spot, never stored
                return .symbolicated(report)
            case .inputError:
                return .inputError(reply.message ?? "unparseable report")
            case .internalError, .permanentError, .workerLost:
                return .workerFailed(reply.message ?? "worker error")
            }
        case .timedOut(let seconds): return .timedOut(seconds: seconds)
        case .protocolError(let why, _): return .workerFailed(why)
        case .crashed(let how): return .workerFailed(how)
        case .abandoned: return .workerFailed("worker lost")
        }
    }
}
