#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on a lock file, created if missing, held until `release()`.
/// Every file lock in Stackline is taken here, and a lock that was not granted is an error.
public final class FileLock {
    public let path: String
    private var descriptor: Int32

    /// Waits for the lock. With `followingLinks: false` a link at `path` is refused.
    public convenience init(exclusive path: String, followingLinks: Bool = true) throws(SystemCallError) {
        guard let taken = try Self.take(path, followingLinks: followingLinks, waiting: true) else {
            // flock without LOCK_NB only returns once granted (or with an error, thrown above).
            throw SystemCallError(call: "flock", path: path, errno: EWOULDBLOCK)
        }
        self.init(path: path, descriptor: taken)
    }

    /// The lock if no one holds it now, else nil at once (`flock` with `LOCK_NB`).
    public static func ifFree(exclusive path: String, followingLinks: Bool = true) throws(SystemCallError) -> FileLock? {
        try take(path, followingLinks: followingLinks, waiting: false).map { FileLock(path: path, descriptor: $0) }
    }

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    /// The locked descriptor, or nil when `waiting` is false and another holds the lock.
    private static func take(_ path: String, followingLinks: Bool, waiting: Bool) throws(SystemCallError) -> Int32? {
        let fd = try SystemCall.check("open", path: path) {
            open(path, O_RDWR | O_CREAT | O_CLOEXEC | (followingLinks ? 0 : O_NOFOLLOW), PrivateFiles.fileMode)
        }
        do {
            try SystemCall.check("flock", path: path) { flock(fd, LOCK_EX | (waiting ? 0 : LOCK_NB)) }
            return fd
        } catch {
            close(fd)
            if !waiting && error.errno == EWOULDBLOCK { return nil }
            throw error
        }
    }

    /// Unlocks and closes; later calls do nothing.
    public func release() {
        guard descriptor >= 0 else { return }
        flock(descriptor, LOCK_UN)
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}
