import Foundation

/// The `stackline` executable under test: $STACKLINE_BIN if set, else the one built next
/// to the running test bundle, else .build/debug/stackline in the package.
public func stacklineExecutable() throws -> String {
    let fm = FileManager.default
    if let explicit = ProcessInfo.processInfo.environment["STACKLINE_BIN"] {
        guard fm.isExecutableFile(atPath: explicit) else {
            throw TestSupportError("STACKLINE_BIN=\(explicit) is not an executable file")
        }
        return explicit
    }
    var candidates: [String] = []
    if let arg0 = CommandLine.arguments.first {
        var dir = URL(fileURLWithPath: arg0).resolvingSymlinksInPath().deletingLastPathComponent()
        // The test bundle may be a directory (…/debug/X.xctest/…); walk up a few levels.
        for _ in 0..<4 {
            candidates.append(dir.appendingPathComponent("stackline").path)
            dir.deleteLastPathComponent()
        }
    }
    candidates.append(packageRoot + "/.build/debug/stackline")
    for candidate in candidates where fm.isExecutableFile(atPath: candidate) {
        var isDir: ObjCBool = false
        if fm.fileExists(atPath: candidate, isDirectory: &isDir), !isDir.boolValue { return candidate }
    }
    throw TestSupportError(
        "the stackline executable was not found (looked at \(candidates.joined(separator: ", "))); run `swift build` first or set STACKLINE_BIN")
}

/// Runs `stackline ARGS` (the executable above).
@discardableResult
public func runStackline(_ arguments: [String], stdin: String? = nil) throws -> ProcessOutput {
    try runProcess(try stacklineExecutable(), arguments, stdin: stdin.map { Data($0.utf8) })
}
