import Foundation
import ReportModel

extension SymbolStoreDirectory {
    /// Every build id with a sidecar, read from file names only: a remote worker advertises a
    /// build machine's whole store this way each minute, where `list()` would decode every sidecar.
    public func storedBuildIds() -> [BuildID] {
        let fm = FileManager.default
        let root = self.root + "/.build-id"
        guard let prefixes = try? fm.contentsOfDirectory(atPath: root) else { return [] }
        var ids: [BuildID] = []
        for prefix in prefixes where prefix.utf8.count == 2 {
            for name in (try? fm.contentsOfDirectory(atPath: root + "/" + prefix)) ?? [] where name.hasSuffix(".json") {
                if let id = try? BuildID(prefix + name.dropLast(5), lengths: .anyByteCount) { ids.append(id) }
            }
        }
        return ids
    }
}
