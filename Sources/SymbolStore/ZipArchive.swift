import Foundation

/// Unpacks zip archives (dSYM uploads, the way Xcode archives them) with the system `unzip`
/// tool, a well-kept inflater, run as a subprocess.
enum ZipArchive {
    /// Optional cap on what one archive may unpack to, in bytes (besides the free disk space).
    static let limitVariable = "STACKLINE_UNZIP_MAX_BYTES"

    /// Extracts `archive` into a new temporary directory and returns it; the caller removes it.
    /// An archive that declares more uncompressed bytes than the temporary directory's free
    /// space is refused before anything is written (a zip bomb must not fill the disk).
    static func extract(_ archive: String) throws(StoreError) -> String {
        guard let unzip = ["/usr/bin/unzip", "/bin/unzip", "/usr/local/bin/unzip"].first(where: FileManager.default.isExecutableFile)
        else { throw .archive(path: archive, reason: "the unzip tool is not installed (scripts/install-deps.sh)") }
        let temporary = NSTemporaryDirectory()
        // -Zt: one summary line, "N files, X bytes uncompressed, Y bytes compressed: Z%".
        let summary = try run(unzip, ["-Zt", archive], archive: archive)
        let words = summary.split(separator: " ")
        if let i = words.firstIndex(of: "uncompressed,"), i >= 2, let declared = UInt64(words[i - 2]) {
            let free = (try? FileManager.default.attributesOfFileSystem(forPath: temporary)[.systemFreeSize] as? NSNumber)?
                .uint64Value ?? .max
            guard declared < free else {
                throw .archive(path: archive, reason: "it would unpack to \(declared) bytes, more than the \(free) bytes free in \(temporary)")
            }
            if let limit = ProcessInfo.processInfo.environment[limitVariable].flatMap({ UInt64($0) }), declared > limit {
                throw .archive(path: archive, reason: "it would unpack to \(declared) bytes, more than \(limitVariable)=\(limit)")
            }
        }
        var template = Array((temporary + "/stackline-unzip.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw .archive(path: archive, reason: "cannot make a temporary directory: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        do {
            // -qq: quiet; -o: no prompts (a prompt would wait on stdin forever).
            _ = try run(unzip, ["-qq", "-o", archive, "-d", directory], archive: archive)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        return directory
    }

    /// Runs unzip; its standard output, or its first error line as the refusal reason.
    private static func run(_ unzip: String, _ arguments: [String], archive: String) throws(StoreError) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: unzip)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        do {
            try process.run()
        } catch {
            throw .archive(path: archive, reason: "cannot run \(unzip): \(error.localizedDescription)")
        }
        // Small outputs (a summary line, quiet extraction), so reading one pipe after the other cannot deadlock.
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let line = (message + text).split(separator: "\n").first.map(String.init) ?? "exit status \(process.terminationStatus)"
            throw .archive(path: archive, reason: "unzip failed: \(line)")
        }
        return text
    }
}
