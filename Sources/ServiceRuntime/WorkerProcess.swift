#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SystemCalls
import WorkerProtocol

/// How a worker process ended.
public enum WorkerExit: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    public var description: String {
        switch self {
        case .exited(let status): "worker exited with status \(status)"
        // The kernel's OOM killer (and a cgroup's memory limit) kills with SIGKILL, and the
        // master never does so during a job without saying why, so that is the likely cause.
        case .signaled(SIGKILL): "worker killed by SIGKILL (signal 9, out of memory?)"
        case .signaled(let sig): "worker crashed (signal \(sig)\(signalName(sig).map { ": \($0)" } ?? ""))"
        }
    }
}

public func signalName(_ sig: Int32) -> String? {
    switch sig {
    case SIGSEGV: "SIGSEGV"
    case SIGKILL: "SIGKILL"
    case SIGABRT: "SIGABRT"
    case SIGILL: "SIGILL"
    case SIGBUS: "SIGBUS"
    case SIGFPE: "SIGFPE"
    case SIGTRAP: "SIGTRAP"
    case SIGTERM: "SIGTERM"
    case SIGINT: "SIGINT"
    default: nil
    }
}

/// Errors starting a worker.
public enum WorkerSpawnError: Error, CustomStringConvertible {
    case spawnFailed(path: String, errno: Int32)
    case pipeFailed(errno: Int32)

    public var description: String {
        switch self {
        case .spawnFailed(let path, let e): "cannot start worker \(path): \(SystemCallError.reason(errno: e))"
        case .pipeFailed(let e): "cannot create pipe: \(SystemCallError.reason(errno: e))"
        }
    }
}

/// One `stackline-worker` child: its stdin for job frames, its stdout for replies; its stderr
/// is its parent's (the master, or a remote worker's connection process), so worker logs land in
/// the parent's log.
///
/// Spawned with posix_spawn rather than Foundation.Process so that pipes are close-on-exec
/// (a sibling worker never holds another's stdin open) and so that we reap with waitpid
/// ourselves and always learn the signal that killed a worker.
/// Not Sendable: one thread owns each (a `WorkerSession`'s, or `ParserPool`'s under its lock).
public final class WorkerProcess {
    public let pid: pid_t
    private var stdinFD: Int32
    private let stdoutFD: Int32
    public let reader: FrameReader
    public private(set) var exit: WorkerExit?
    /// Half of what the worker's stdin pipe buffers (`canSendAhead`); zero when unknown.
    public let sendAheadLimit: Int

    /// pipe2 is not visible from Swift on glibc, so pipes are made close-on-exec with fcntl;
    /// spawning under one lock keeps another thread's spawn from inheriting them in between.
    private static let spawnLock = NSLock()

    private static func cloexecPipe() throws -> [Int32] {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw WorkerSpawnError.pipeFailed(errno: errno) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return fds
    }

    /// `pipeBytes`: how much each pipe should buffer (`SystemCall.setPipeCapacity`), for a parent
    /// that sends several frames in one write (`ParserPool`); nil keeps the kernel's default.
    /// `environment`: the child's whole environment; nil gives it the parent's. A parent that
    /// must tell a child something (a remote worker's grouping rules) says it here, never by
    /// `setenv`, which is not thread-safe and would reach every later child.
    public init(
        executable: String, arguments: [String], niceness: Int32 = 0, pipeBytes: Int? = nil, environment: [String: String]? = nil
    ) throws {
        WorkerProcess.spawnLock.lock()
        defer { WorkerProcess.spawnLock.unlock() }
        let toChild = try WorkerProcess.cloexecPipe()
        let fromChild: [Int32]
        do { fromChild = try WorkerProcess.cloexecPipe() } catch {
            close(toChild[0]); close(toChild[1])
            throw error
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the target, so only these two ends reach the child.
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { $0.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil] } ?? []
        defer { envp.forEach { free($0) } }
        var child: pid_t = 0
        let rc = environment == nil
            ? posix_spawn(&child, executable, &actions, nil, argv, environ)
            : posix_spawn(&child, executable, &actions, nil, argv, envp)
        close(toChild[0])
        close(fromChild[1])
        guard rc == 0 else {
            close(toChild[1]); close(fromChild[0])
            throw WorkerSpawnError.spawnFailed(path: executable, errno: rc)
        }
        if niceness != 0 { SystemCall.setNiceness(niceness, of: child) }
        if let pipeBytes {
            SystemCall.setPipeCapacity(toChild[1], bytes: pipeBytes)
            SystemCall.setPipeCapacity(fromChild[0], bytes: pipeBytes)
        }
        pid = child
        stdinFD = toChild[1]
        stdoutFD = fromChild[0]
        reader = FrameReader(fd: stdoutFD)
        sendAheadLimit = (SystemCall.pipeCapacity(toChild[1]) ?? 0) / 2
    }

    deinit {
        if stdinFD >= 0 { close(stdinFD) }
        close(stdoutFD)
    }

    /// Whether a job frame of `size` bytes may be sent while the worker is still busy with the
    /// one before: when, with its length prefix, it fits in half the stdin pipe's buffer. The
    /// worker reads each frame whole before it starts on it, so such a frame always fits and
    /// the write returns without waiting for the worker; a larger one could block the master
    /// while the worker blocks on a reply the master is not reading.
    public func canSendAhead(_ size: Int) -> Bool {
        size + 4 <= sendAheadLimit
    }

    public func send(_ payload: Data) throws(FrameError) {
        try Framing.write(payload, to: stdinFD)
    }

    /// Several frames in one write (`Framing.bundle`).
    public func send(frames: [Data]) throws(FrameError) {
        try Framing.write(bundled: Framing.bundle(frames), to: stdinFD)
    }

    /// Closing stdin is the polite way to stop a worker: it exits when its input ends.
    public func closeInput() {
        if stdinFD >= 0 { close(stdinFD) }
        stdinFD = -1
    }

    public func kill(_ sig: Int32 = SIGKILL) {
        if exit == nil { _ = Glibc.kill(pid, sig) }
    }

    /// Reaps the child if it has exited; never blocks.
    public func poll() -> WorkerExit? {
        if exit == nil { reap(options: WNOHANG) }
        return exit
    }

    /// Blocks until the child exits.
    public func wait() -> WorkerExit {
        while exit == nil { reap(options: 0) }
        return exit!
    }

    /// Waits up to `seconds`, then kills with SIGKILL and waits.
    public func wait(upTo seconds: Double) -> WorkerExit {
        let deadline = Date().addingTimeInterval(seconds)
        // A worker asked to stop exits within a millisecond or two: a fixed 20 ms poll kept
        // `master --once` (and every worker restart) waiting for nothing (scripts/bench-queue.sh's
        // drain). Back off from 1 ms so a slow exit still costs few wakeups.
        var pause: useconds_t = 1_000
        while Date() < deadline {
            if let exit = poll() { return exit }
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
        kill(SIGKILL)
        return wait()
    }

    private func reap(options: Int32) {
        var status: Int32 = 0
        let r = waitpid(pid, &status, options)
        if r == pid {
            // WIFEXITED / WTERMSIG are macros Swift cannot import.
            let termSignal = status & 0x7f
            exit = termSignal == 0 ? .exited((status >> 8) & 0xff) : .signaled(termSignal)
        } else if r < 0 && errno != EINTR {
            exit = .exited(-1)
        }
    }
}
