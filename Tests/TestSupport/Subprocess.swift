import Foundation

/// What a finished subprocess left behind.
public struct ProcessOutput: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    public var command: [String]

    public var succeeded: Bool { status == 0 }
    /// One line naming the command and its status, plus stderr; for failure messages.
    public var summary: String {
        "`\(command.joined(separator: " "))` exited \(status); stderr: \(stderr.trimmingCharacters(in: .whitespacesAndNewlines))"
    }
}

public struct TestSupportError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs `executable` (a path, or a name looked up on PATH) with `arguments`, feeding it
/// `stdin` (nothing: /dev/null) and capturing stdout and stderr. Input and output go
/// through temporary files, so there is no pipe deadlock however large they are.
@discardableResult
public func runProcess(
    _ executable: String, _ arguments: [String], stdin: String? = nil,
    environment: [String: String]? = nil, currentDirectory: String? = nil
) throws -> ProcessOutput {
    let path = executable.contains("/") ? executable : try findTool(executable)
    let scratch = try makeTemporaryDirectory(prefix: "proc")
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let inPath = scratch + "/stdin", outPath = scratch + "/stdout", errPath = scratch + "/stderr"
    FileManager.default.createFile(atPath: inPath, contents: Data((stdin ?? "").utf8))
    FileManager.default.createFile(atPath: outPath, contents: nil)
    FileManager.default.createFile(atPath: errPath, contents: nil)

    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    if let environment {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
    let inHandle = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
    let outHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
    let errHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    process.standardInput = inHandle
    process.standardOutput = outHandle
    process.standardError = errHandle
    try process.run()
    process.waitUntilExit()
    try? inHandle.close(); try? outHandle.close(); try? errHandle.close()
    let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? String(decoding: (FileManager.default.contents(atPath: outPath) ?? Data()), as: UTF8.self)
    let err = String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self)
    return ProcessOutput(status: process.terminationStatus, stdout: out, stderr: err, command: [path] + arguments)
}

/// Like `runProcess`, but a non-zero exit is an error carrying the command and its stderr.
@discardableResult
public func runChecked(
    _ executable: String, _ arguments: [String], stdin: String? = nil,
    environment: [String: String]? = nil
) throws -> ProcessOutput {
    let result = try runProcess(executable, arguments, stdin: stdin, environment: environment)
    guard result.succeeded else { throw TestSupportError(result.summary) }
    return result
}
