#if canImport(Glibc)
import Glibc
import StacklineMalloc
#elseif canImport(Darwin)
import Darwin
#endif

/// errno-checked system calls: each runs a call that returns -1 (or nil) and sets errno on
/// failure, reads errno before anything else can change it, retries `EINTR`, and throws a
/// `SystemCallError` naming the call and the path.
public enum SystemCall {
    /// Runs `body` until it does not fail with `EINTR`; -1 becomes a `SystemCallError`.
    @inline(never) @discardableResult
    public static func check<T: FixedWidthInteger>(_ call: String, path: String? = nil, _ body: () -> T) throws(SystemCallError) -> T {
        while true {
            let result = body()
            guard result == -1 else { return result }
            let code = errno
            guard code == EINTR else { throw SystemCallError(call: call, path: path, errno: code) }
        }
    }

    /// `check` for calls that return a pointer, nil on failure.
    @inline(never)
    public static func check<T>(_ call: String, path: String? = nil, _ body: () -> T?) throws(SystemCallError) -> T {
        while true {
            if let result = body() { return result }
            let code = errno
            guard code == EINTR else { throw SystemCallError(call: call, path: path, errno: code) }
        }
    }

    /// One `read` into `buffer`: the number of bytes read, 0 at the end of input.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, path: String? = nil) throws(SystemCallError) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        return try check("read", path: path) { Glibc.read(fd, base, buffer.count) }
    }

    /// Writes all of `bytes`, across short writes and `EINTR`: the one write loop (worker frames,
    /// files entering the store, `lookup`'s output). A write that makes no progress is `ENOSPC`.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String? = nil) throws(SystemCallError) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let n = try check("write", path: path) { Glibc.write(fd, base + done, bytes.count - done) }
            guard n > 0 else { throw SystemCallError(call: "write", path: path, errno: ENOSPC) }
            done += n
        }
    }

    /// Copies up to `count` bytes of `source` from `offset` to `destination`'s position inside
    /// the kernel (`sendfile`), without passing them through this process: the number copied
    /// (0 at the end of `source`), or nil when the kernel cannot copy between these two files,
    /// for the caller to copy through memory instead.
    public static func copyRange(from source: Int32, at offset: UInt64, to destination: Int32, count: Int) throws(SystemCallError) -> Int? {
        var from = off_t(offset)
        while true {
            let n = Glibc.sendfile(destination, source, &from, count)
            if n >= 0 { return n }
            switch errno {
            case EINTR: continue
            case EXDEV, ENOSYS, EINVAL, EOPNOTSUPP: return nil
            default: throw SystemCallError(call: "sendfile", path: nil, errno: errno)
            }
        }
    }

    /// The `stat` of what `fd` has open.
    public static func status(of fd: Int32, path: String? = nil) throws(SystemCallError) -> stat {
        var info = stat()
        try check("fstat", path: path) { fstat(fd, &info) }
        return info
    }

    /// The `stat` of what `path` names (a link followed).
    public static func status(ofPath path: String) throws(SystemCallError) -> stat {
        var info = stat()
        try check("stat", path: path) { stat(path, &info) }
        return info
    }

    /// Sets the nice value of a process. Best effort by design: a process that cannot be
    /// lowered still works, it only competes harder for the CPU, so failure is reported as false
    /// rather than thrown.
    @discardableResult
    public static func setNiceness(_ value: Int32, of process: Int32) -> Bool {
        setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(process), value) == 0
    }

    /// Sets the nice value of the calling thread only (Linux keeps one per thread; `who` 0 is the
    /// caller). Best effort, as `setNiceness`. Only ever raised: lowering it again needs a
    /// privilege a service does not have, so a thread lowered stays lowered.
    @discardableResult
    public static func setThreadNiceness(_ value: Int32) -> Bool {
        setNiceness(value, of: 0)
    }

    /// Asks the kernel to buffer `bytes` in the pipe `fd` (F_SETPIPE_SZ; unprivileged processes
    /// get up to /proc/sys/fs/pipe-max-size, 1 MiB by default). Best effort: false when refused.
    @discardableResult
    public static func setPipeCapacity(_ fd: Int32, bytes: Int) -> Bool {
        #if canImport(Glibc)
        // F_SETPIPE_SZ (linux/fcntl.h: F_LINUX_SPECIFIC_BASE + 7) is not visible through Glibc.
        let setPipeSize: Int32 = 1024 + 7
        return fcntl(fd, setPipeSize, Int32(clamping: bytes)) > 0
        #else
        return false
        #endif
    }

    /// How many bytes the pipe `fd` buffers (F_GETPIPE_SZ), or nil when it cannot say (not a
    /// pipe). A writer that never puts more than this in an empty pipe never blocks on it.
    public static func pipeCapacity(_ fd: Int32) -> Int? {
        #if canImport(Glibc)
        // F_GETPIPE_SZ (linux/fcntl.h: F_LINUX_SPECIFIC_BASE + 8) is not visible through Glibc.
        let getPipeSize: Int32 = 1024 + 8
        let size = fcntl(fd, getPipeSize)
        return size > 0 ? Int(size) : nil
        #else
        return nil
        #endif
    }

    /// A child dying between our write and its read must surface as EPIPE from `write`, not
    /// end this process: every process that writes to children's pipes calls this first.
    public static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Caps this process's address space (RLIMIT_AS) at `bytes`: past it an allocation fails and
    /// the Swift runtime traps, which ends this process only. A parse child sets it, so a report
    /// that makes a parser allocate without bound costs that child, never `serve`'s memory.
    public static func limitAddressSpace(to bytes: Int) throws(SystemCallError) {
        var limit = rlimit(rlim_cur: rlim_t(clamping: bytes), rlim_max: rlim_t(clamping: bytes))
        _ = try check("setrlimit") { setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit) }
    }

    /// Lets glibc's malloc keep freed memory for reuse instead of returning it to the kernel
    /// after every job. By default buffers over 128 KiB (job frames, reports) are mapped and
    /// unmapped each time, and a thread arena is trimmed whenever it shrinks, so each job paid
    /// for `madvise` and then page faults to get the memory back, a large part of the master's
    /// CPU on 30-frame reports (perf under scripts/bench-queue.sh). A process keeps at most 64 MiB it
    /// no longer uses per arena; allocations of 32 MiB and more are still mapped and unmapped.
    /// Called first thing by the long-running processes (master, serve, workers).
    public static func keepFreedMemoryForReuse() {
        #if canImport(Glibc)
        _ = mallopt(M_MMAP_THRESHOLD, 32 << 20)
        _ = mallopt(M_TRIM_THRESHOLD, 64 << 20)
        #endif
    }

    /// Takes the pages of a read-only file mapping out of this process's resident set
    /// (`MADV_DONTNEED`): they stay in the page cache, and a later read of the range maps them
    /// again. Only whole pages inside `region` are dropped. Advice only: a failure leaves the
    /// pages where they were, so it is not reported.
    public static func dropResidentPages(of region: UnsafeRawBufferPointer) {
        guard let base = region.baseAddress else { return }
        let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
        let start = (UInt(bitPattern: base) + page - 1) & ~(page - 1)
        let end = (UInt(bitPattern: base) + UInt(region.count)) & ~(page - 1)
        guard page > 0, end > start, let first = UnsafeMutableRawPointer(bitPattern: start) else { return }
        _ = madvise(first, Int(end - start), Int32(MADV_DONTNEED))
    }

    /// Gives memory freed so far back to the system (`malloc_trim`): after a phase that freed
    /// much more than what follows will allocate.
    public static func returnFreedMemory() {
        #if canImport(Glibc)
        _ = malloc_trim(0)
        #endif
    }
}

extension stat {
    /// The modification time in nanoseconds since the epoch: the one spelling of it, for the
    /// symcache's source identity, its staleness check and the fetch cache's last use.
    public var modifiedNanoseconds: Int64 { Int64(st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(st_mtim.tv_nsec) }
}
