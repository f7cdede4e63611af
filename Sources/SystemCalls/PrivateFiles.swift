#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Modes of everything Stackline creates that holds reports, keys or debug files: the job
/// database (which keeps raw reports and the namespaces' AES keys in clear), its WAL and SHM,
/// the symbol store with its `.incoming` folder, and a worker's cache. Owner only, whatever the
/// umask of whoever started the process: 0600 files, 0700 directories. What exists already is
/// left as its owner set it.
public enum PrivateFiles {
    public static let fileMode: mode_t = 0o600
    public static let directoryMode: mode_t = 0o700

    /// Makes `path` and each missing parent, 0700 (what existed is left alone).
    public static func makeDirectory(_ path: String) throws(SystemCallError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + part
            if mkdir(prefix, directoryMode) == 0 {
                // The umask may have taken bits the owner needs (0177 leaves no x): set them.
                try SystemCall.check("chmod", path: prefix) { chmod(prefix, directoryMode) }
                continue
            }
            let code = errno
            var info = stat()
            guard code == EEXIST, stat(prefix, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
                throw SystemCallError(call: "mkdir", path: prefix, errno: code)
            }
        }
    }

    /// Creates `path` as an empty 0600 file unless it exists. SQLite creates a database 0644 (less
    /// the umask), and its `-wal` and `-shm` files copy the database file's mode: a file made
    /// here first keeps all three private.
    public static func createFile(_ path: String) throws(SystemCallError) {
        let fd = try SystemCall.check("open", path: path) { open(path, O_WRONLY | O_CREAT | O_CLOEXEC, fileMode) }
        close(fd)
    }
}
