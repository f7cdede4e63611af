import Foundation

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

    /// A fresh crash report: runs the demo with `SWIFT_BACKTRACE=…,format=<format>,symbolicate=<mode>`
    /// (`format` is `json` or `text`).
    public func report(symbolicate: String = "off", mode: String = "index", cached: Bool = true, format: String = "json") throws -> Data {
        let key = "\(symbolicate)-\(mode)-\(format)"
        if cached, let data = lock.withLock({ reports[key] }) { return data }
        let binary = try binary()
        let out = dir + "/report-\(key)-\(UUID().uuidString.prefix(6)).json"
        let run = try runProcess(
            binary, [mode],
            environment: ["SWIFT_BACKTRACE": "enable=yes,symbolicate=\(symbolicate),format=\(format),output-to=\(out)"])
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
