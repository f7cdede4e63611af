import Foundation

/// The Swift files under `folders` of `root` (the package by default), as (path from the root,
/// text), in the order the directory walk gives them: what the fitness tests scan.
public func swiftSourceFiles(in folders: [String], root: String = packageRoot) throws -> [(path: String, text: String)] {
    var files: [(path: String, text: String)] = []
    for folder in folders {
        let top = root + "/" + folder
        guard let walker = FileManager.default.enumerator(atPath: top) else { throw TestSupportError("cannot list \(top)") }
        for case let relative as String in walker where relative.hasSuffix(".swift") {
            files.append((folder + "/" + relative, try String(contentsOfFile: top + "/" + relative, encoding: .utf8)))
        }
    }
    return files
}
