#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import ReportModel
import ServiceRuntime
import TestSupport
import Testing
import WorkerProtocol

/// `WorkerSession`'s exit classification, driven by real child processes: /bin/sh scripts that
/// misbehave in one known way each (the expected exit is what the script does to itself), and
/// the real `stackline-worker` with its `STACKLINE_TEST_HOOK_*` markers.
@Suite(.serialized) struct WorkerSessionTests {
    init() {
        // A worker that dies before reading its frame turns our write into EPIPE, not a signal.
        signal(SIGPIPE, SIG_IGN)
    }

    static func shell(_ script: String, environment: [String: String]? = nil) -> WorkerSession {
        WorkerSession(
            command: WorkerCommand(executable: "/bin/sh", arguments: ["-c", script], environment: environment), respawnPause: 0,
            logger: Logger(label: "test.session"))
    }

    static func started(_ session: WorkerSession) throws -> pid_t {
        try session.ensureStarted()
        return try #require(session.pid)
    }

    /// The pid no longer names a process: the session killed and reaped it.
    static func isGone(_ pid: pid_t) -> Bool { kill(pid, 0) == -1 && errno == ESRCH }

    /// Starts `script`, hands it one frame and returns how the session says it died (nil: the
    /// wait ended some other way).
    static func crash(of script: String, environment: [String: String]? = nil) throws -> String? {
        let session = shell(script, environment: environment)
        _ = try started(session)
        #expect(session.send(Data("job".utf8)) == .sent)
        guard case .crashed(let how) = session.awaitFrame(timeout: 60) else { return nil }
        #expect(!session.isRunning)
        return how
    }

    /// The wait was given up by a hook, and the worker is gone.
    static func expectAbandoned(_ exit: JobExit<Data>, _ pid: pid_t) {
        guard case .abandoned = exit else {
            Issue.record("not abandoned: \(exit)")
            return
        }
        #expect(isGone(pid))
    }

    @Test func aReplyIsTheFrameTheWorkerWrote() throws {
        let session = Self.shell("exec cat")
        _ = try Self.started(session)
        let payload = Data("a frame, echoed".utf8)
        #expect(session.send(payload) == .sent)
        guard case .replied(let frame) = session.awaitFrame(timeout: 60) else {
            Issue.record("no reply")
            return
        }
        #expect(frame == payload)
        #expect(session.isRunning)
        session.stop()
    }

    @Test func aDecodedReplyMustAnswerTheJobAsked() throws {
        let session = Self.shell("exec cat")
        _ = try Self.started(session)
        let reply = JobReply(kind: .inputError, jobId: 8, message: "not a report")
        #expect(session.send(try reply.encodedFrame()) == .sent)
        guard case .replied(let decoded) = session.awaitReply(to: 8, timeout: 60) else {
            Issue.record("no reply")
            return
        }
        #expect(decoded == reply)
        // The same reply, awaited for job 9: the stream is out of sync, the worker is killed.
        let pid = try #require(session.pid)
        #expect(session.send(try reply.encodedFrame()) == .sent)
        guard case .protocolError(let why, let permanent) = session.awaitReply(to: 9, timeout: 60) else {
            Issue.record("a reply for another job was accepted")
            return
        }
        #expect(why.contains("for job 8"), "\(why)")
        #expect(!permanent)
        #expect(!session.isRunning && Self.isGone(pid))
    }

    @Test func bytesThatAreNoReplyAreAProtocolError() throws {
        let session = Self.shell("exec cat")
        let pid = try Self.started(session)
        #expect(session.send(Data("garbage".utf8)) == .sent)
        guard case .protocolError(let why, let permanent) = session.awaitReply(to: 1, timeout: 60) else {
            Issue.record("garbage was accepted as a reply")
            return
        }
        #expect(why.hasPrefix("worker sent a malformed reply"), "\(why)")
        #expect(!permanent)
        #expect(Self.isGone(pid))
    }

    /// A length prefix of 2^32 − 1, over any frame limit: permanent, as it would be on every attempt.
    @Test func aReplyOverTheFrameLimitIsAPermanentProtocolError() throws {
        let session = Self.shell(#"printf '\377\377\377\377'; exec sleep 600"#)
        let pid = try Self.started(session)
        guard case .protocolError(let why, let permanent) = session.awaitFrame(timeout: 60) else {
            Issue.record("an over-limit reply was not refused")
            return
        }
        #expect(why.hasPrefix("worker reply is \(UInt32.max) bytes, over the frame limit"), "\(why)")
        #expect(permanent)
        #expect(Self.isGone(pid))
    }

    @Test func aWorkerThatKillsItselfCrashedWithItsSignal() throws {
        let how = try Self.crash(of: "head -c 1 >/dev/null; kill -SEGV $$")
        #expect(how?.contains("signal 11") == true, "\(how ?? "not a crash")")
    }

    @Test func aWorkerThatExitsCrashedWithItsStatus() throws {
        #expect(try Self.crash(of: "head -c 1 >/dev/null; exit 3") == "worker exited with status 3")
    }

    @Test func aSilentWorkerTimesOutAndIsKilled() throws {
        let session = Self.shell("exec sleep 600")
        let pid = try Self.started(session)
        #expect(session.send(Data("job".utf8)) == .sent)
        let exit = session.awaitFrame(timeout: 0.3, checkEvery: 0.05)
        guard case .timedOut(let seconds) = exit else {
            Issue.record("a hang did not time out: \(exit)")
            return
        }
        #expect(seconds == 0.3)
        #expect(exit.failure == "timed out after 0.3s (worker killed)")
        #expect(Self.isGone(pid))
    }

    /// Heartbeats come while the worker is silent, and one that gives the job up (a lost lease)
    /// ends the wait at once: the third here, long before the timeout.
    @Test func aHeartbeatThatGivesUpAbandonsTheJob() throws {
        let session = Self.shell("exec sleep 600")
        let pid = try Self.started(session)
        var heartbeats = 0
        var lastWaited = -1.0
        var wakesInOrder = true
        let exit = session.awaitFrame(
            timeout: 600, checkEvery: 0.05, heartbeatEvery: 0.02,
            onWake: { waited in
                if waited < lastWaited { wakesInOrder = false }
                lastWaited = waited
                return .keepWaiting
            },
            onHeartbeat: {
                heartbeats += 1
                return heartbeats == 3 ? .abandon : .keepWaiting
            })
        Self.expectAbandoned(exit, pid)
        #expect(heartbeats == 3)
        #expect(wakesInOrder && lastWaited >= 0)
    }

    @Test func aWakeHookThatGivesUpAbandonsTheJob() throws {
        let session = Self.shell("exec sleep 600")
        let pid = try Self.started(session)
        var wakes = 0
        let exit = session.awaitFrame(timeout: 600, checkEvery: 0.01, onWake: { _ in
            wakes += 1
            return wakes == 2 ? .abandon : .keepWaiting
        })
        Self.expectAbandoned(exit, pid)
        #expect(wakes == 2)
    }

    /// A dead worker is replaced by the next `ensureStarted`, and the hooks see both ends.
    @Test func aWorkerThatDiedIsRestarted() throws {
        let session = Self.shell("head -c 1 >/dev/null; exit 0")
        var starts: [Bool] = []
        var ends = 0
        session.onStart = { starts.append($0) }
        session.onEnd = { ends += 1 }
        let first = try Self.started(session)
        #expect(session.send(Data("job".utf8)) == .sent)
        guard case .crashed = session.awaitFrame(timeout: 60) else {
            Issue.record("an exit was not classified as a crash")
            return
        }
        let second = try Self.started(session)
        #expect(first != second)
        #expect(starts == [false, true])
        #expect(ends == 1)
        session.stop()
        #expect(ends == 2)
    }

    /// The command's environment is the child's whole environment: what it names arrives, what
    /// this process has (HOME, PATH) does not.
    @Test func theChildGetsTheCommandsEnvironmentOnly() throws {
        let script = #"head -c 1 >/dev/null; [ "$STACKLINE_GROUPING_RULES" = /rules/of/the/master.json ] && [ -z "$HOME" ] && exit 7; exit 9"#
        #expect(try Self.crash(of: script, environment: ["STACKLINE_GROUPING_RULES": "/rules/of/the/master.json"]) == "worker exited with status 7")
    }

    // MARK: The real worker

    static func worker(_ scratch: TempDirectory) -> WorkerSession {
        var environment = ProcessInfo.processInfo.environment
        environment["STACKLINE_TEST_HOOKS"] = "1"
        return WorkerSession(
            command: WorkerCommand(executable: TestPaths.worker, arguments: ["--symbols", scratch.path], environment: environment),
            respawnPause: 0, logger: Logger(label: "test.session"))
    }

    static func job(_ id: Int64, _ text: String) throws -> Data {
        try JobRequest(jobId: id, reportId: id, attempt: 1, format: "ips", raw: Data(text.utf8)).encodedFrame()
    }

    @Test func theRealWorkerRepliesCrashesAndHangsAsItsHooksSay() throws {
        let scratch = try TempDirectory("session")
        defer { scratch.remove() }
        let session = Self.worker(scratch)

        /// Starts the worker if it is not running, hands it one job and waits for its exit.
        func run(_ id: Int64, _ text: String) throws -> JobExit<JobReply> {
            _ = try Self.started(session)
            #expect(session.send(try Self.job(id, text)) == .sent)
            return session.awaitReply(to: id, timeout: 120)
        }

        // Not a report: the worker answers this job with an input error.
        guard case .replied(let reply) = try run(41, "this is not a crash report") else {
            Issue.record("no reply to a plain job")
            return
        }
        #expect(reply.kind == .inputError && reply.jobId == 41)

        // The hooks kill the worker with the signal they name.
        for (id, hook, named) in [(Int64(42), "SEGV", "signal 11"), (43, "SIGKILL", "SIGKILL")] {
            let exit = try run(id, "STACKLINE_TEST_HOOK_" + hook)
            guard case .crashed(let how) = exit else {
                Issue.record("\(hook) hook: \(exit)")
                continue
            }
            #expect(how.contains(named), "\(hook) hook: \(how)")
        }

        let pid = try Self.started(session)
        #expect(session.send(try Self.job(44, "STACKLINE_TEST_HOOK_HANG")) == .sent)
        let hang = session.awaitReply(to: 44, timeout: 2)
        guard case .timedOut = hang else {
            Issue.record("HANG hook: \(hang)")
            return
        }
        #expect(Self.isGone(pid))
    }
}
