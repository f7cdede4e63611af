#if canImport(Glibc)
import Glibc
#endif
import Foundation
public import ReportModel
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
/// deadline. Blocking: call it from a thread that may block, not from an event loop.
public enum OneShotWorker {
    public static func symbolicate(
        raw: Data, format: String, executable: String, arguments: [String], timeout: Double
    ) -> OneShotOutcome {
        let worker: WorkerProcess
        do { worker = try WorkerProcess(executable: executable, arguments: arguments) } catch {
            return .workerFailed("\(error)")
        }
        defer {
            worker.closeInput()
            _ = worker.wait(upTo: 2)
        }
        let request = JobRequest(jobId: 0, reportId: 0, attempt: 1, format: format, raw: raw)
        do {
            try worker.send(try request.encodedFrame())
        } catch .tooLarge(let size) {
            return .workerFailed(Framing.jobFrameTooLarge(size))
        } catch {
            return .workerFailed(worker.poll().map { "\($0)" } ?? "cannot send the report to the worker: \(error)")
        }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let waitMs = Int32(max(0, min(deadline.timeIntervalSinceNow * 1000, 3_600_000)))
            let frame: Data?
            do { frame = try worker.reader.read(timeoutMs: waitMs) } catch {
                // End of stream: the worker died. Its exit status says how.
                return .workerFailed("\(worker.wait(upTo: 2))")
            }
            if let frame {
                let reply: JobReply
                do { reply = try JobReply(frame: frame) } catch {
                    worker.kill()
                    return .workerFailed("worker sent a malformed reply: \(error)")
                }
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
            }
            if Date() >= deadline {
                worker.kill()
                return .timedOut(seconds: timeout)
            }
        }
    }
}
