import Foundation

/// Build-ids a store holds, from its sidecars' file names (`.build-id/ab/cdef….json`): what
/// the store's files say, no Stackline code involved.
public func storedBuildIDs(_ store: String) -> Set<String> {
    let base = store + "/.build-id"
    var ids: Set<String> = []
    for prefix in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: base + "/" + prefix)) ?? [] where name.hasSuffix(".json") {
            ids.insert(prefix + name.dropLast(5))
        }
    }
    return ids
}
