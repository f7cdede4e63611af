#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A walk of a directory tree through descriptors only: depth first, entries in name order,
/// links never followed. Every entry that is not a directory is handed to the caller with its
/// kind, and the caller decides what links, FIFOs and devices mean; directories are descended
/// into, not handed over.
public enum DirectoryWalk {
    /// What the walk passes to its visitor.
    public enum Event {
        case entry(DirectoryEntry)
        /// A directory that could not be opened or listed (call `openat` or `fdopendir`), or an
        /// entry whose `fstatat` failed.
        case failed(path: String, SystemCallError)
        /// A directory deeper than `maximumDepth`, not entered.
        case tooDeep(path: String)
    }

    /// Walks the directory `fd` has open (left open); `label` names it in paths, and
    /// `joining` makes a child's path from its parent's and its name.
    public static func walk(
        directory fd: Int32, label: String, maximumDepth: Int? = nil,
        joining: (String, String) -> String = { $0 + "/" + $1 }, _ visit: (Event) -> Void
    ) {
        walk(directory: fd, label: label, components: [], maximumDepth: maximumDepth, joining: joining, visit)
    }

    private static func walk(
        directory fd: Int32, label: String, components: [String], maximumDepth: Int?,
        joining: (String, String) -> String, _ visit: (Event) -> Void
    ) {
        let names: [String]
        do { names = try list(fd, path: label) } catch {
            visit(.failed(path: label, error))
            return
        }
        for name in names.sorted() {
            let path = joining(label, name)
            let below = components + [name]
            var info = stat()
            do { try SystemCall.check("fstatat", path: path) { fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW) } } catch {
                visit(.failed(path: path, error))
                continue
            }
            let kind = FileKind(mode: info.st_mode)
            guard kind == .directory else {
                visit(.entry(DirectoryEntry(name: name, path: path, components: below, kind: kind, mode: info.st_mode, parent: fd)))
                continue
            }
            if let maximumDepth, components.count >= maximumDepth {
                visit(.tooDeep(path: path))
                continue
            }
            let sub: Int32
            do {
                sub = try SystemCall.check("openat", path: path) {
                    openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
                }
            } catch {
                visit(.failed(path: path, error))
                continue
            }
            walk(directory: sub, label: path, components: below, maximumDepth: maximumDepth, joining: joining, visit)
            close(sub)
        }
    }

    /// The names in the directory `fd` has open, "." and ".." left out; `fd` stays open.
    private static func list(_ fd: Int32, path: String) throws(SystemCallError) -> [String] {
        let listing = try SystemCall.check("fcntl", path: path) { fcntl(fd, F_DUPFD_CLOEXEC, 0) }
        let dir: OpaquePointer
        do { dir = try SystemCall.check("fdopendir", path: path) { fdopendir(listing) } } catch {
            close(listing)
            throw error
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let item = readdir(dir) {
            let name = withUnsafeBytes(of: item.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
