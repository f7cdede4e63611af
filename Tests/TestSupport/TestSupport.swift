import Foundation

/// Paths of the package and of the binaries `swift build` / `swift test` produced.
public enum TestPaths {
    /// The package root, from this file's location.
    public static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The build directory holding the test bundle, and so `stackline` and `stackline-worker`.
    public static let buildDirectory: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = (exe as NSString).deletingLastPathComponent
        // On Linux the test runner is `.build/<triple>/debug/StacklinePackageTests.xctest`.
        while !dir.isEmpty, dir != "/", !FileManager.default.fileExists(atPath: dir + "/stackline") {
            dir = (dir as NSString).deletingLastPathComponent
        }
        return dir
    }()

    public static var stackline: String { buildDirectory + "/stackline" }
    public static var worker: String { buildDirectory + "/stackline-worker" }

    public static let demoSource = packageRoot + "/Tests/Fixtures/demo/Demo.swift"
}

/// A fresh directory under the system temp dir, removed by `remove()`.
public struct TempDirectory {
    public let path: String

    public init(_ prefix: String = "stackline-test") throws {
        path = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    public func file(_ name: String) -> String { path + "/" + name }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// What a finished child process left.
public struct ProcessOutput {
    public var status: Int32
    public var signaled: Bool
    public var stdout: String
    public var stderr: String
}

public enum TestProcessError: Error, CustomStringConvertible {
    case timedOut(String)
    public var description: String {
        switch self { case .timedOut(let what): "timed out: \(what)" }
    }
}

/// Runs an executable to completion, capturing its output. The timeout only guards against hangs.
@discardableResult
public func runProcess(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:],
    stdin: Data? = nil, currentDirectory: String? = nil, timeout: Double = 300
) throws -> ProcessOutput {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
    // Files, not pipes: a child writing more than a pipe buffer can never block on us.
    let outPath = NSTemporaryDirectory() + "out-\(UUID().uuidString)"
    let errPath = NSTemporaryDirectory() + "err-\(UUID().uuidString)"
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    defer {
        try? FileManager.default.removeItem(atPath: outPath)
        try? FileManager.default.removeItem(atPath: errPath)
    }
    process.standardOutput = FileHandle(forWritingAtPath: outPath)
    process.standardError = FileHandle(forWritingAtPath: errPath)
    if let stdin {
        let pipe = Pipe()
        process.standardInput = pipe
        try process.run()
        pipe.fileHandleForWriting.write(stdin)
        try pipe.fileHandleForWriting.close()
    } else {
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning {
        if Date() > deadline {
            process.terminate()
            throw TestProcessError.timedOut("\(executable) \(arguments.joined(separator: " "))")
        }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return ProcessOutput(
        status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
        stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
}

/// The demo crasher compiled with `swiftc -g` once per test process, and reports it produced
/// through the Swift runtime's own backtracer.
public final class CrashFixture: @unchecked Sendable {
    public static let shared = CrashFixture()

    private let lock = NSLock()
    private var built: String?
    private var reports: [String: Data] = [:]
    private let dir: String

    private init() {
        dir = NSTemporaryDirectory() + "stackline-fixture-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    /// Path of the compiled demo program (with DWARF).
    public func binary() throws -> String {
        try lock.withLock {
            if let built { return built }
            let output = dir + "/Demo"
            let swiftc = try locateSwiftc()
            let result = try runProcess(swiftc, ["-g", "-Onone", TestPaths.demoSource, "-o", output])
            guard result.status == 0 else {
                throw FixtureError.compileFailed(result.stderr)
            }
            built = output
            return output
        }
    }

    /// A fresh crash report: runs the demo with `SWIFT_BACKTRACE=…,format=json,symbolicate=<mode>`.
    public func report(symbolicate: String = "off", mode: String = "index", cached: Bool = true) throws -> Data {
        let key = "\(symbolicate)-\(mode)"
        if cached, let data = lock.withLock({ reports[key] }) { return data }
        let binary = try binary()
        let out = dir + "/report-\(key)-\(UUID().uuidString.prefix(6)).json"
        let run = try runProcess(
            binary, [mode],
            environment: ["SWIFT_BACKTRACE": "enable=yes,symbolicate=\(symbolicate),format=json,output-to=\(out)"])
        guard run.signaled || run.status != 0 else { throw FixtureError.didNotCrash }
        guard let data = FileManager.default.contents(atPath: out), !data.isEmpty else {
            throw FixtureError.noReport(run.stderr)
        }
        lock.withLock { reports[key] = data }
        return data
    }

    private func locateSwiftc() throws -> String {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = "\(dir)/swiftc"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        if FileManager.default.isExecutableFile(atPath: "/opt/swift/usr/bin/swiftc") { return "/opt/swift/usr/bin/swiftc" }
        throw FixtureError.noCompiler
    }
}

public enum FixtureError: Error, CustomStringConvertible {
    case compileFailed(String)
    case didNotCrash
    case noReport(String)
    case noCompiler

    public var description: String {
        switch self {
        case .compileFailed(let log): "swiftc failed: \(log)"
        case .didNotCrash: "the demo program did not crash"
        case .noReport(let log): "the runtime wrote no backtrace report: \(log)"
        case .noCompiler: "swiftc not found on PATH"
        }
    }
}

/// A real report made distinct (different digest) by a field the parser ignores;
/// `marker` lands in the report text, for the worker's test hooks.
public func variant(of report: Data, number: Int, marker: String? = nil) -> Data {
    var text = String(decoding: report, as: UTF8.self)
    guard let brace = text.firstIndex(of: "{") else { return report }
    var extra = "\"stacklineTestVariant\": \(number), "
    if let marker { extra += "\"stacklineTestMarker\": \"\(marker)\", " }
    text.insert(contentsOf: extra, at: text.index(after: brace))
    return Data(text.utf8)
}

/// The GNU build id of an ELF file, read by binutils' readelf (an independent oracle).
public func readelfBuildID(_ path: String) throws -> String? {
    let out = try runProcess("/usr/bin/readelf", ["-n", path])
    guard let line = out.stdout.split(separator: "\n").first(where: { $0.contains("Build ID:") }) else { return nil }
    return line.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) }
}
