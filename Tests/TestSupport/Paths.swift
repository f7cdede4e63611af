import Foundation

/// The package root (the directory holding Package.swift), found from this source file.
public let packageRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }  // Tests/TestSupport/Paths.swift
    return url.path
}()

/// Directories searched for tools besides PATH: the Swift toolchain's (swift-demangle,
/// clang) may not be on PATH when tests run under a different environment.
private func searchDirectories() -> [String] {
    var dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
    dirs += ["/usr/local/bin", "/usr/bin", "/bin", "/opt/swift/usr/bin"]
    return dirs
}

/// The full path of tool `name`, or an error naming the tool and how to get it.
public func findTool(_ name: String) throws -> String {
    if name.contains("/") {
        guard FileManager.default.isExecutableFile(atPath: name) else {
            throw TestSupportError("required tool \(name) is missing")
        }
        return name
    }
    for dir in searchDirectories() where !dir.isEmpty {
        let candidate = dir + "/" + name
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    throw TestSupportError(
        "required tool '\(name)' was not found on PATH or in /opt/swift/usr/bin; run scripts/install-deps.sh (elfutils, llvm-14, binutils) or install the Swift toolchain")
}

/// The first of `names` that exists, e.g. ["llvm-symbolizer-14", "llvm-symbolizer"].
public func findTool(anyOf names: [String]) throws -> String {
    for name in names { if let path = try? findTool(name) { return path } }
    throw TestSupportError(
        "none of the required tools \(names.joined(separator: ", ")) was found; run scripts/install-deps.sh")
}

/// A new empty directory under the system temporary directory.
public func makeTemporaryDirectory(prefix: String = "stackline-test") throws -> String {
    let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? NSTemporaryDirectory()
    let template = (base.hasSuffix("/") ? base : base + "/") + prefix + ".XXXXXX"
    var bytes = Array(template.utf8CString)
    guard let made = mkdtemp(&bytes) else {
        throw TestSupportError("mkdtemp(\(template)) failed: errno \(errno)")
    }
    return String(cString: made)
}

/// Every file and directory under `root`, relative, with size and modification time:
/// compare two snapshots to prove a command changed nothing.
public func directorySnapshot(_ root: String) -> [String] {
    let fm = FileManager.default
    var entries: [String] = []
    guard let walker = fm.enumerator(atPath: root) else { return ["<missing \(root)>"] }
    while let relative = walker.nextObject() as? String {
        let attrs = (try? fm.attributesOfItem(atPath: root + "/" + relative)) ?? [:]
        let size = (attrs[.size] as? NSNumber)?.intValue ?? -1
        let mtime = (attrs[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        let type = (attrs[.type] as? FileAttributeType) == .typeDirectory ? "d" : "f"
        entries.append("\(type) \(relative) \(size) \(mtime)")
    }
    return entries.sorted()
}

/// Paths of the package and of the binaries `swift build` / `swift test` produced.
public enum TestPaths {
    /// The package root, from this file's location.
    public static var packageRoot: String { TestSupport.packageRoot }

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
        path = try makeTemporaryDirectory(prefix: prefix)
    }

    public func file(_ name: String) -> String { path + "/" + name }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A value behind a lock, for collecting results from concurrent work.
public final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    public init(_ value: T) { stored = value }
    public var value: T { lock.withLock { stored } }
    public func mutate(_ body: (inout T) -> Void) { lock.withLock { body(&stored) } }
}
