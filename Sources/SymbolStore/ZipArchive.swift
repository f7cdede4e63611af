import Foundation

/// Unpacks zip archives (dSYM uploads, the way Xcode archives them) with the system `unzip`
/// tool, a well-kept inflater, run as a subprocess.
enum ZipArchive {
    /// Extracts `archive` into a new temporary directory and returns it; the caller removes it.
    static func extract(_ archive: String) throws(StoreError) -> String {
        guard let unzip = ["/usr/bin/unzip", "/bin/unzip", "/usr/local/bin/unzip"].first(where: FileManager.default.isExecutableFile)
        else { throw .archive(path: archive, reason: "the unzip tool is not installed (scripts/install-deps.sh)") }
        var template = Array((NSTemporaryDirectory() + "/stackline-unzip.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw .archive(path: archive, reason: "cannot make a temporary directory: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: unzip)
        // -qq: quiet; -o: no prompts (a prompt would wait on stdin forever).
        process.arguments = ["-qq", "-o", archive, "-d", directory]
        let errors = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw .archive(path: archive, reason: "cannot run \(unzip): \(error.localizedDescription)")
        }
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            let line = message.split(separator: "\n").first.map(String.init) ?? "exit status \(process.terminationStatus)"
            throw .archive(path: archive, reason: "unzip failed: \(line)")
        }
        return directory
    }
}
