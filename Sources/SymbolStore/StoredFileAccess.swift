import DebugInfo
import Foundation
import ReportModel
import SystemCalls

extension SymbolStoreDirectory {
    /// Opens the file stored in `role` for `id` to serve it (debuginfod), or nil when the store
    /// holds none. Only what the store put there is opened: every directory below the root
    /// and the file itself are opened without following links (`O_NOFOLLOW`), the file must be
    /// a regular file, and it must still carry `id`; anything else throws. The root itself may
    /// be a link, as the operator chose it.
    public func open(_ id: BuildID, role: Role) throws(StoreError) -> RegularFile? {
        let relative = Self.layoutPath(id, role: role)
        let label = root + "/" + relative
        func failure(_ path: String, _ code: Int32) -> StoreError {
            code == ELOOP ? .symbolicLink(path: path) : .io(path: path, reason: SystemCallError.reason(errno: code))
        }
        var directory = Foundation.open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else {
            if errno == ENOENT { return nil }
            throw failure(root, errno)
        }
        defer { close(directory) }
        var path = root
        let components = relative.split(separator: "/").map(String.init)
        for component in components.dropLast() {
            path += "/" + component
            let next = openat(directory, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else {
                if errno == ENOENT { return nil }
                throw failure(path, errno)
            }
            close(directory)
            directory = next
        }
        let fd = openat(directory, components[components.count - 1], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw failure(label, errno)
        }
        let file: RegularFile
        do { file = try RegularFile(adopting: fd, path: label) } catch {
            throw error.kind.map { .notRegularFile(path: label, kind: $0) } ?? .io(path: label, reason: error.reason)
        }
        guard Self.identity(of: file) == id else {
            throw .io(path: label, reason: "does not hold build-id \(id) (changed since it was stored); not served")
        }
        return file
    }
}
