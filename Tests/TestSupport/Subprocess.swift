import Foundation

/// What a finished subprocess left behind.
public struct ProcessOutput: Sendable {
    public var status: Int32
    /// True when the process was ended by a signal; `status` is then the signal number.
    public var signaled: Bool
    public var stdout: String
    public var stderr: String
    public var command: [String]

    public var succeeded: Bool { status == 0 && !signaled }
    /// One line naming the command and its status, plus stderr; for failure messages.
    public var summary: String {
        "`\(command.joined(separator: " "))` \(signaled ? "died of signal" : "exited") \(status); stderr: \(stderr.trimmingCharacters(in: .whitespacesAndNewlines))"
    }
}

public struct TestSupportError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs `executable` (a path, or a name looked up on PATH) with `arguments`, feeding it
/// `stdin` (nothing: /dev/null) and capturing stdout and stderr. Input and output go
/// through temporary files, so there is no pipe deadlock however large they are. The
/// timeout only guards against hangs; it is not a performance assertion.
@discardableResult
public func runProcess(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
    stdin: Data? = nil, currentDirectory: String? = nil, timeout: Double = 600
) throws -> ProcessOutput {
    let path = executable.contains("/") ? executable : try findTool(executable)
    let scratch = try makeTemporaryDirectory(prefix: "proc")
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let inPath = scratch + "/stdin", outPath = scratch + "/stdout", errPath = scratch + "/stderr"
    _ = FileManager.default.createFile(atPath: inPath, contents: stdin ?? Data())
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)

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
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning {
        if Date() > deadline {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestSupportError("timed out after \(Int(timeout)) s: \(([path] + arguments).joined(separator: " "))")
        }
        Thread.sleep(forTimeInterval: 0.01)
    }
    try? inHandle.close(); try? outHandle.close(); try? errHandle.close()
    let out = String(decoding: FileManager.default.contents(atPath: outPath) ?? Data(), as: UTF8.self)
    let err = String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self)
    return ProcessOutput(
        status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
        stdout: out, stderr: err, command: [path] + arguments)
}

/// `runProcess` with text on standard input.
@discardableResult
public func runProcess(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, input: String
) throws -> ProcessOutput {
    try runProcess(executable, arguments, environment: environment, stdin: Data(input.utf8))
}

/// Like `runProcess`, but a non-zero exit is an error carrying the command and its stderr.
@discardableResult
public func runChecked(
    _ executable: String, _ arguments: [String], stdin: String? = nil,
    environment: [String: String]? = nil
) throws -> ProcessOutput {
    let result = try runProcess(executable, arguments, environment: environment, stdin: stdin.map { Data($0.utf8) })
    guard result.succeeded else { throw TestSupportError(result.summary) }
    return result
}
