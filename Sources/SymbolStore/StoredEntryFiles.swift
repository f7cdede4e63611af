import Foundation
import ReportModel

extension SymbolStoreDirectory {
    /// The sidecar (`.build-id/ab/cdef….json`) of `id`, whether or not it exists: the file that
    /// says an entry is stored, and the one a cache of the store may mark as used.
    public func sidecarPath(buildID id: BuildID) -> String {
        root + "/" + Self.layoutPath(id, role: .executable) + ".json"
    }

    /// Bytes the files stored for `id` take: both roles, the sidecar and the symcache, as `lstat` sees them.
    /// A file with two names (an unstripped image stored in both roles is one copy, hard-linked)
    /// is counted once; 0 when nothing is stored.
    public func storedBytes(buildID id: BuildID) -> Int64 {
        let base = root + "/" + Self.layoutPath(id, role: .executable)
        var seen: Set<[UInt64]> = []
        var total: Int64 = 0
        for path in [base + ".json", base + ".debug", base, symbolCachePath(buildID: id)] {
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            if seen.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted { total += Int64(info.st_size) }
        }
        return total
    }
}
