import Foundation
import SymbolStore

/// The zip ingest of `symbols add`: the input is a `.zip` added to an empty scratch store.
/// Afterwards the store may hold only directories and regular files, the archive's unpacking
/// directory must be gone, and nothing may appear beside the store.
enum ZipTarget {
    static func ingest(_ data: Data) throws(FuzzFailure) -> String {
        let scratch = Scratch.shared.path
        let fm = FileManager.default
        let store = scratch + "/store", temporary = scratch + "/tmp"
        try? fm.removeItem(atPath: store)
        try? fm.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        let archive = try Scratch.shared.write(data, name: "input.zip")
        let before = Set((try? fm.contentsOfDirectory(atPath: scratch)) ?? [])

        var outcomes: [String] = []
        // The unpacking directory goes into the scratch directory, to see what is left.
        let limits = StoreLimits(temporaryDirectory: temporary)
        for (path, result) in SymbolStoreDirectory(root: store, limits: limits).addTree(path: archive) {
            switch result {
            case .success(let outcome): outcomes.append("stored \(outcome.entry.buildId)")
            case .failure(let error):
                if error.description.isEmpty { throw FuzzFailure("\(path): refusal without a message") }
                outcomes.append("refused: \(error.description)")
            }
        }

        let left = (try? fm.contentsOfDirectory(atPath: temporary)) ?? []
        guard left.isEmpty else { throw FuzzFailure("left behind in TMPDIR: \(left.sorted())") }
        let after = Set((try? fm.contentsOfDirectory(atPath: scratch)) ?? []).subtracting(["store"])
        guard after == before.subtracting(["store"]) else {
            throw FuzzFailure("written beside the store: \(after.subtracting(before).sorted())")
        }
        try checkOnlyRegularFiles(store)
        return outcomes.joined(separator: "; ")
    }

    /// The store holds only what it copied itself: no links, FIFOs or devices.
    private static func checkOnlyRegularFiles(_ root: String) throws(FuzzFailure) {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return }
        while let relative = walker.nextObject() as? String {
            var st = stat()
            guard lstat(root + "/" + relative, &st) == 0 else { continue }
            let type = st.st_mode & S_IFMT
            guard type == S_IFREG || type == S_IFDIR else {
                throw FuzzFailure("store holds a non-regular file (mode \(String(type, radix: 8))): \(relative)")
            }
        }
    }
}
