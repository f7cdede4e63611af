import Foundation
import SystemCalls

/// A regular file open for reading. Every input is opened through here: never blocking (a
/// FIFO or a device is refused from its `fstat`, not waited on), and checked on the open
/// descriptor, so what was checked is what is read, whatever happens to the path meanwhile.
public final class RegularFile {
    /// The name in messages; not reopened.
    public let path: String
    public let descriptor: Int32
    public let size: UInt64

    /// Opens `path`; with `followingLinks: false` a symbolic link in the last component is
    /// refused instead of followed.
    public convenience init(path: String, followingLinks: Bool = true) throws(RegularFileError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followingLinks ? 0 : O_NOFOLLOW))
        guard fd >= 0 else { throw RegularFileError(path: path, reason: Self.openFailure(errno)) }
        try self.init(adopting: fd, path: path)
    }

    /// Takes ownership of `fd` (closed if it is not a regular file); `path` names it in messages.
    public init(adopting fd: Int32, path: String) throws(RegularFileError) {
        let st: stat
        do { st = try SystemCall.status(of: fd, path: path) } catch {
            close(fd)
            throw RegularFileError(path: path, reason: error.reason)
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            let kind = Self.kind(mode: st.st_mode)
            throw RegularFileError(path: path, reason: "not a regular file (\(kind))", kind: kind)
        }
        self.path = path
        descriptor = fd
        size = UInt64(st.st_size)
    }

    deinit { close(descriptor) }

    /// Up to `count` bytes at `offset`; fewer only at the end of the file.
    public func read(at offset: UInt64, count: Int) throws(RegularFileError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw RegularFileError(path: path, reason: "cannot read: \(SystemCallError.reason(errno: errno))") }
            if n == 0 { break }
            done += n
        }
        return Array(bytes.prefix(done))
    }

    /// What a file mode is, for "not a regular file (a FIFO)".
    public static func kind(mode: mode_t) -> String { FileKind(mode: mode).description }

    /// `open`'s errno as a reason; ELOOP under O_NOFOLLOW means the path is a link.
    public static func openFailure(_ code: Int32) -> String {
        code == ELOOP ? "is a symbolic link, not followed" : SystemCallError.reason(errno: code)
    }
}
