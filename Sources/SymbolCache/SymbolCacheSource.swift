import DebugInfo
import SystemCalls
#if canImport(Glibc)
import Glibc
#endif

/// The debug file a symcache was built from, as `fstat` sees it.
///
/// Size, modification time (nanoseconds) and inode together: the store replaces a debug file by
/// writing a new file and renaming it over the old one, which changes the inode even when size
/// and time collide, and an edit in place changes the time.
public struct SymbolCacheSource: Sendable, Equatable {
    public var size: UInt64
    public var modifiedNanoseconds: Int64
    public var inode: UInt64

    public init(size: UInt64, modifiedNanoseconds: Int64, inode: UInt64) {
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
        self.inode = inode
    }

    /// The source identity of an open file (from `fstat` on its descriptor).
    public init(file: RegularFile) throws(SymbolCacheError) {
        let st: stat
        do { st = try SystemCall.status(of: file.descriptor, path: file.path) } catch {
            throw .unreadable(path: file.path, reason: error.reason)
        }
        self.init(status: st)
    }

    /// The source identity a `stat` gives (of a path, or of a descriptor).
    public init(status st: stat) {
        size = UInt64(st.st_size)
        modifiedNanoseconds = st.modifiedNanoseconds
        inode = UInt64(st.st_ino)
    }
}
