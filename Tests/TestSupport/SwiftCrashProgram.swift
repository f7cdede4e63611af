import Foundation

/// `Tests/Fixtures/swift-backtrace/Ledger.swift`, compiled once per test process, and the stderr
/// of its crashes as the Swift runtime's backtracer writes it (`SWIFT_BACKTRACE=…,format=text|json`,
/// no `output-to`: the report comes after the runtime's own `Fatal error:` line).
public final class SwiftCrashProgram: @unchecked Sendable {
    public static let shared = SwiftCrashProgram()
    /// The executable's name: what a report's app must be.
    public static let name = "Ledger"
    public static let source = TestPaths.packageRoot + "/Tests/Fixtures/swift-backtrace/Ledger.swift"

    private let lock = NSLock()
    private var built: String?
    private var runs: [String: Data] = [:]

    private init() {}

    /// Path of the compiled program (with DWARF).
    public func binary() throws -> String {
        try lock.withLock {
            if let built { return built }
            let dir = try makeTemporaryDirectory(prefix: "ledger")
            let output = dir + "/" + Self.name
            let result = try runProcess(try findTool("swiftc"), ["-g", "-Onone", Self.source, "-o", output])
            guard result.status == 0 else { throw FixtureError.compileFailed(result.stderr) }
            built = output
            return output
        }
    }

    /// The stderr of one crash: `mode` is index, unwrap, abort or noisy; `format` text or json.
    public func stderr(_ mode: String, format: String) throws -> Data {
        let key = "\(mode)-\(format)"
        if let data = lock.withLock({ runs[key] }) { return data }
        let run = try runProcess(
            try binary(), [mode], environment: ["SWIFT_BACKTRACE": "enable=yes,symbolicate=no,format=\(format)"], timeout: 120)
        guard run.signaled || run.status != 0 else { throw FixtureError.didNotCrash }
        let data = Data(run.stderr.utf8)
        lock.withLock { runs[key] = data }
        return data
    }
}
