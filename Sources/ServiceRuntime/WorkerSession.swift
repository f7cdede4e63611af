#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import WorkerProtocol

/// How to start a worker process.
public struct WorkerCommand: Sendable {
    public var executable: String
    public var arguments: [String]
    public var niceness: Int32
    /// The child's whole environment; nil gives it the parent's (`WorkerProcess`).
    public var environment: [String: String]?

    public init(executable: String, arguments: [String], niceness: Int32 = 0, environment: [String: String]? = nil) {
        self.executable = executable
        self.arguments = arguments
        self.niceness = niceness
        self.environment = environment
    }
}

/// What became of handing a job frame to the worker.
public enum SendOutcome: Sendable, Equatable {
    case sent
    /// The frame is over the frame limit, with its length prefix: checked before a byte is
    /// written, so the worker's stream is still in sync. The same job makes the same frame on
    /// every attempt.
    case tooLarge(Int)
    /// The worker could not take it (it died, or its pipe broke): how it ended. The process is gone.
    case lost(String)
}

/// How waiting for one job's reply ended. `Reply` is the frame as the worker wrote it
/// (`awaitFrame`, for a remote worker that passes it on undecoded) or the decoded `JobReply`
/// (`awaitReply`). In every case but `replied` the worker process is gone (killed and reaped).
public enum JobExit<Reply> {
    case replied(Reply)
    /// The worker broke the protocol: a reply over the frame limit (`permanent`: it is as large
    /// on every attempt), or one that does not decode or answers another job (the stream is
    /// out of sync). The worker was killed.
    case protocolError(String, permanent: Bool)
    /// No reply within the timeout: the worker was killed.
    case timedOut(seconds: Double)
    /// The worker died during the job (crash, out-of-memory kill, a broken pipe): how it ended.
    case crashed(String)
    /// A hook gave the job up (its lease was lost, the drain deadline passed): the worker was killed.
    case abandoned
}

extension JobExit {
    /// Why the job failed, as its error and a remote worker's failure reply say; nil for a reply.
    public var failure: String? {
        switch self {
        case .replied: nil
        case .protocolError(let why, _): why
        case .timedOut(let seconds): "timed out after \(formatSeconds(seconds)) (worker killed)"
        case .crashed(let how): how
        case .abandoned: "given up (worker killed)"
        }
    }
}

/// "60s", or "1.5s" for a fraction: durations in job errors and logs read as they were configured.
public func formatSeconds(_ s: Double) -> String {
    s == s.rounded() ? "\(Int(s))s" : String(format: "%.1fs", s)
}

/// What a hook says while a job runs.
public enum WaitVerdict: Sendable {
    case keepWaiting
    /// Give the job up: the session kills the worker and answers `abandoned`.
    case abandon
}

/// The one job loop over a worker process, shared by the master's local slots (`WorkerSlot`),
/// a remote worker's slots (`RemoteSlot`) and the one-shot `/api/v1/symbolicate` worker
/// (`OneShotWorker`): start the process (and restart it, never in a fork loop), send a job
/// frame, wait for the reply while calling the caller's heartbeat and wake hooks, and classify
/// how the wait ended (`JobExit`). What an exit means for the job (retry, fail, a reply for the
/// master, an HTTP status) stays with the caller.
///
/// Blocking and owned by one thread: every call blocks its thread in `poll(2)` on the worker's
/// pipe, so callers run it on a thread of their own (a slot's) or on the blocking-work pool
/// (`/symbolicate`), never on an event loop or Swift's cooperative pool. Not Sendable: a
/// session and its process belong to the thread that made it.
public final class WorkerSession {
    public let command: WorkerCommand
    /// The least time between two starts: a worker that dies at start must not become a fork loop.
    private let respawnPause: Double
    private let logger: Logger
    /// What its logs call a process ("worker", "slot process").
    private let noun: String
    private var process: WorkerProcess?
    private var lastSpawn = Date.distantPast
    private var everStarted = false

    /// Called when a process starts; `true` when it replaces an earlier one.
    public var onStart: ((_ isRestart: Bool) -> Void)?
    /// Called when the process is gone (exited, killed, or stopped), after it was reaped.
    public var onEnd: (() -> Void)?

    public init(command: WorkerCommand, respawnPause: Double = 1, noun: String = "worker", logger: Logger) {
        self.command = command
        self.respawnPause = respawnPause
        self.noun = noun
        self.logger = logger
    }

    deinit {
        if let process {
            process.closeInput()
            _ = process.wait(upTo: 5)
        }
    }

    /// The running process's id, if one runs.
    public var pid: pid_t? { process?.pid }
    public var isRunning: Bool { process != nil }

    /// Starts a process when none runs; one that exited while idle is reaped (and logged) first.
    public func ensureStarted() throws {
        if let process, let exit = process.poll() {
            logger.warning("\(noun) exited while idle", metadata: ["pid": "\(process.pid)", "exit": "\(exit)"])
            ended()
        }
        guard process == nil else { return }
        let sinceLast = Date().timeIntervalSince(lastSpawn)
        if sinceLast < respawnPause { Thread.sleep(forTimeInterval: respawnPause - sinceLast) }
        lastSpawn = Date()
        let started = try WorkerProcess(
            executable: command.executable, arguments: command.arguments, niceness: command.niceness,
            environment: command.environment)
        logger.debug("\(noun) started", metadata: ["pid": "\(started.pid)"])
        process = started
        onStart?(everStarted)
        everStarted = true
    }

    /// Whether a frame of `size` bytes may go while the worker still runs the job before
    /// (`WorkerProcess.canSendAhead`): such a write never blocks.
    public func canSendAhead(_ size: Int) -> Bool {
        process?.canSendAhead(size) ?? false
    }

    /// Writes one job frame to the worker.
    public func send(_ frame: Data) -> SendOutcome {
        guard let process else { return .lost("\(noun) lost") }
        do {
            try process.send(frame)
            return .sent
        } catch .tooLarge(let size) {
            return .tooLarge(size)
        } catch {
            // Perhaps part of the frame was written: the stream is out of sync either way.
            return .lost(died())
        }
    }

    /// Waits for the reply to the job sent last, for at most `timeout` seconds from now.
    ///
    /// The thread wakes at least every `checkEvery` seconds, at `wakeBy()` when that gives a
    /// time, and every `heartbeatEvery` seconds when given. At each wake without a reply, in
    /// this order: `onWake` (with the seconds waited so far) may give the job up; then the
    /// timeout; then, when one is due, `onHeartbeat` may give it up.
    public func awaitFrame(
        timeout: Double, checkEvery: Double = 0.5, heartbeatEvery: Double? = nil,
        wakeBy: () -> Date? = { nil },
        onWake: (_ waited: Double) -> WaitVerdict = { _ in .keepWaiting },
        onHeartbeat: () -> WaitVerdict = { .keepWaiting }
    ) -> JobExit<Data> {
        guard let process else { return .crashed("\(noun) lost") }
        let start = Date()
        let deadline = start.addingTimeInterval(timeout)
        var nextHeartbeat = heartbeatEvery.map { start.addingTimeInterval($0) } ?? .distantFuture
        while true {
            var wakeAt = min(nextHeartbeat, deadline, Date().addingTimeInterval(checkEvery))
            if let extra = wakeBy() { wakeAt = min(wakeAt, extra) }
            let waitMs = Int32(max(0, min(wakeAt.timeIntervalSinceNow * 1000, 3_600_000)))
            let frame: Data?
            do {
                frame = try process.reader.read(timeoutMs: waitMs)
            } catch .tooLarge(let size) {
                // The worker checks its reply against the same limit, so this one has another
                // limit; the reply is as large on every attempt, and the stream is lost.
                kill()
                return .protocolError(
                    "worker reply is \(size) bytes, over the frame limit of \(Framing.describe(bytes: Framing.maxFrame))",
                    permanent: true)
            } catch {
                return .crashed(died())
            }
            if let frame { return .replied(frame) }
            let now = Date()
            if onWake(now.timeIntervalSince(start)) == .abandon {
                kill()
                return .abandoned
            }
            if now >= deadline {
                kill()
                return .timedOut(seconds: timeout)
            }
            guard let heartbeatEvery, now >= nextHeartbeat else { continue }
            nextHeartbeat = now.addingTimeInterval(heartbeatEvery)
            if onHeartbeat() == .abandon {
                kill()
                return .abandoned
            }
        }
    }

    /// `awaitFrame`, decoded: a reply that does not decode, or answers another job than
    /// `jobId`, is a protocol error (the worker is killed: its stream is out of sync).
    public func awaitReply(
        to jobId: Int64, timeout: Double, checkEvery: Double = 0.5, heartbeatEvery: Double? = nil,
        wakeBy: () -> Date? = { nil },
        onWake: (_ waited: Double) -> WaitVerdict = { _ in .keepWaiting },
        onHeartbeat: () -> WaitVerdict = { .keepWaiting }
    ) -> JobExit<JobReply> {
        let exit = awaitFrame(
            timeout: timeout, checkEvery: checkEvery, heartbeatEvery: heartbeatEvery, wakeBy: wakeBy, onWake: onWake,
            onHeartbeat: onHeartbeat)
        switch exit {
        case .replied(let frame):
            do {
                let reply = try JobReply(frame: frame)
                guard reply.jobId == jobId else { throw WrongJob(replyJobId: reply.jobId) }
                return .replied(reply)
            } catch {
                kill()
                return .protocolError("worker sent a malformed reply: \(error)", permanent: false)
            }
        case .protocolError(let why, let permanent): return .protocolError(why, permanent: permanent)
        case .timedOut(let seconds): return .timedOut(seconds: seconds)
        case .crashed(let how): return .crashed(how)
        case .abandoned: return .abandoned
        }
    }

    /// Kills the process (SIGKILL) and reaps it; how it ended, nil when none ran.
    @discardableResult
    public func kill() -> WorkerExit? {
        guard let process else { return nil }
        process.kill(SIGKILL)
        let exit = process.wait()
        ended()
        return exit
    }

    /// Closes the process's input, which stops a worker politely, and waits up to `grace`
    /// seconds before killing it.
    @discardableResult
    public func stop(grace: Double = 5) -> WorkerExit? {
        guard let process else { return nil }
        process.closeInput()
        let exit = process.wait(upTo: grace)
        logger.debug("\(noun) stopped", metadata: ["pid": "\(process.pid)", "exit": "\(exit)"])
        ended()
        return exit
    }

    /// The stream broke: gives the process a few seconds to finish dying, so its own exit
    /// status (a signal, an out-of-memory kill) is what the job's error says.
    private func died() -> String {
        let exit = process?.wait(upTo: 5)
        ended()
        return exit.map { "\($0)" } ?? "\(noun) lost"
    }

    private func ended() {
        guard process != nil else { return }
        process = nil
        onEnd?()
    }
}

/// A reply that reads well but answers another job than the one the worker was given.
private struct WrongJob: Error, CustomStringConvertible {
    let replyJobId: Int64
    var description: String { "the reply is for job \(replyJobId)" }
}
