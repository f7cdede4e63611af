#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One entry a `DirectoryWalk` passes, as `fstatat` saw it without following a link.
public struct DirectoryEntry {
    public let name: String
    /// The walk's label for its root joined with the names down to this entry.
    public let path: String
    /// The names from below the root down to this entry.
    public let components: [String]
    public let kind: FileKind
    public let mode: mode_t
    /// The directory holding the entry, open while the visitor runs.
    let parent: Int32

    /// Opens the entry through its directory's descriptor, never following a link: a name
    /// swapped for a link since the walk saw it fails with `ELOOP`.
    public func open(flags: Int32) throws(SystemCallError) -> Int32 {
        try SystemCall.check("openat", path: path) { openat(parent, name, flags | O_NOFOLLOW | O_CLOEXEC) }
    }
}
