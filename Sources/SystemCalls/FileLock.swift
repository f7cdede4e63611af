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
    public init(exclusive path: String, followingLinks: Bool = true) throws(SystemCallError) {
        self.path = path
        let fd = try SystemCall.check("open", path: path) {
            open(path, O_RDWR | O_CREAT | O_CLOEXEC | (followingLinks ? 0 : O_NOFOLLOW), PrivateFiles.fileMode)
        }
        do {
            try SystemCall.check("flock", path: path) { flock(fd, LOCK_EX) }
        } catch {
            close(fd)
            throw error
        }
        descriptor = fd
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
