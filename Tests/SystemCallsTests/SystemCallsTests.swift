import Foundation
import SystemCalls
import TestSupport
import Testing

/// The SystemCalls module: errors that name the call, a lock other processes see, a walk
/// that reports what each entry is, and no system-call text or lock anywhere else.
@Suite struct SystemCallsTests {
    /// Files under `Sources/` and `Workers/` (outside SystemCalls) that contain `needle`.
    static func filesOutsideSystemCalls(containing needle: String) throws -> [String] {
        var hits: [String] = []
        for top in ["Sources", "Workers"] {
            let root = packageRoot + "/" + top
            guard let walker = FileManager.default.enumerator(atPath: root) else { throw TestSupportError("cannot list \(root)") }
            for case let relative as String in walker where relative.hasSuffix(".swift") {
                let path = top + "/" + relative
                guard !path.hasPrefix("Sources/SystemCalls/") else { continue }
                let text = try String(contentsOfFile: root + "/" + relative, encoding: .utf8)
                if text.contains(needle) { hits.append(path) }
            }
        }
        return hits
    }

    @Test(arguments: ["strerror(", "flock("])
    func onlySystemCallsCalls(_ call: String) throws {
        #expect(try Self.filesOutsideSystemCalls(containing: call) == [], "\(call) outside Sources/SystemCalls")
        // The check itself must see the calls where they are.
        let own = try String(contentsOfFile: packageRoot + "/Sources/SystemCalls/" + (call == "flock(" ? "FileLock.swift" : "SystemCallError.swift"), encoding: .utf8)
        #expect(own.contains(call))
    }

    @Test func aFailedCallNamesCallPathAndErrno() throws {
        let missing = "/nonexistent-\(getpid())/file"
        do {
            try SystemCall.check("open", path: missing) { open(missing, O_RDONLY) }
            Issue.record("opening \(missing) succeeded")
        } catch {
            #expect(error.call == "open" && error.path == missing && error.errno == ENOENT)
            #expect(error.description == "\(missing): open: No such file or directory")
        }
    }

    /// While a FileLock is held, util-linux `flock -n` on the same file is refused; after release it is granted.
    @Test func aLockIsSeenByOtherProcesses() throws {
        let scratch = try TempDirectory()
        defer { scratch.remove() }
        let path = scratch.file("a.lock")
        let tool = try findTool("flock")
        let lock = try FileLock(exclusive: path)
        #expect(try runProcess(tool, ["-n", path, "true"]).status == 1)
        lock.release()
        #expect(try runProcess(tool, ["-n", path, "true"]).status == 0)
    }

    @Test func aLockOnALinkIsRefusedWhenLinksAreNotFollowed() throws {
        let scratch = try TempDirectory()
        defer { scratch.remove() }
        #expect(symlink(scratch.file("target"), scratch.file("link")) == 0)
        #expect(throws: SystemCallError.self) { try FileLock(exclusive: scratch.file("link"), followingLinks: false) }
    }

    /// A tree built here (the oracle): the walk reports every non-directory entry with its
    /// kind, in name order, depth first, without following the link to a directory.
    @Test func theWalkReportsEachEntrysKind() throws {
        let scratch = try TempDirectory()
        defer { scratch.remove() }
        let root = scratch.file("root")
        try FileManager.default.createDirectory(atPath: root + "/b/c", withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/a"))
        try Data("y".utf8).write(to: URL(fileURLWithPath: root + "/b/c/d"))
        try runChecked(try findTool("mkfifo"), [root + "/b/fifo"])
        #expect(symlink(root + "/b", root + "/link") == 0)
        try FileManager.default.createDirectory(atPath: root + "/deep/1/2", withIntermediateDirectories: true)

        let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        #expect(fd >= 0)
        defer { close(fd) }
        var seen: [String] = []
        DirectoryWalk.walk(directory: fd, label: "R", maximumDepth: 2) { event in
            switch event {
            case .entry(let e): seen.append("\(e.path) \(e.kind) \(e.components.joined(separator: "/"))")
            case .tooDeep(let path): seen.append("\(path) too deep")
            case .failed(let path, let error): seen.append("\(path) failed \(error)")
            }
        }
        #expect(seen == [
            "R/a a regular file a",
            "R/b/c/d a regular file b/c/d",
            "R/b/fifo a FIFO b/fifo",
            "R/deep/1/2 too deep",
            "R/link a symbolic link link",
        ])
    }
}
