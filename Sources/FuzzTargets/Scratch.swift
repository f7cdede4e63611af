import Foundation
import SystemCalls

/// A private directory for the targets that need their input as a file. One per process,
/// reused across inputs (libFuzzer runs millions of them), removed by `removeAll()`.
/// Sendable: `path` is immutable, and libFuzzer runs one input at a time.
final class Scratch: @unchecked Sendable {
    static let shared = Scratch()

    let path: String

    private init() {
        let base = FuzzTarget.settings.temporaryDirectory
        path = base + "/stackline-fuzz-\(getpid())"
        try? FileManager.default.removeItem(atPath: path)
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Writes `data` to `name` in the scratch directory, replacing what was there.
    func write(_ data: Data, name: String) throws(FuzzFailure) -> String {
        let file = path + "/" + name
        guard FileManager.default.createFile(atPath: file, contents: data) else {
            throw FuzzFailure("harness: cannot write \(file): \(SystemCallError.reason(errno: errno))")
        }
        return file
    }

    func removeAll() { try? FileManager.default.removeItem(atPath: path) }
}
