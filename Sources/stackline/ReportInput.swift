import Compression
import Foundation
import ReportFormats
import ReportModel
import SystemCalls
import WorkerProtocol

/// One input of `submit` or `parse`: a file, stdin for `-`, or an entry of a directory that
/// was refused while listing it (reported in its turn, like a file that fails to load).
struct ReportInput {
    enum Source {
        case standardInput
        /// `followSymlink`: true for a path the user named (like `cat`), false for a directory's entries.
        case file(path: String, followSymlink: Bool)
        case refused(SubmitError)
    }

    let label: String
    let source: Source

    /// Files and `-` as given; directories expand to the files inside, recursively, sorted.
    /// Inside a directory, symbolic links are not followed (neither to files nor to
    /// directories), so a walk never leaves the directory; they come back as refused inputs.
    static func expand(_ arguments: [String]) -> [ReportInput] {
        var inputs: [ReportInput] = []
        for argument in arguments {
            if argument == "-" {
                inputs.append(ReportInput(label: "-", source: .standardInput))
                continue
            }
            var info = stat()
            if stat(argument, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
                inputs += walk(argument)
            } else {
                // Anything else, missing files included: loading it says what is wrong.
                inputs.append(ReportInput(label: argument, source: .file(path: argument, followSymlink: true)))
            }
        }
        return inputs
    }

    /// Every non-directory entry under `root`, without following symbolic links. The walk holds
    /// one descriptor per level, so a tree nested deeper than descriptors allow is reported
    /// as unlistable there, never exhausts the stack.
    private static func walk(_ root: String) -> [ReportInput] {
        var found: [ReportInput] = []
        let unlistable = "cannot list the directory"
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return [ReportInput(label: root, source: .refused(.unreadable(root, unlistable)))] }
        defer { close(fd) }
        DirectoryWalk.walk(directory: fd, label: root, joining: { ($0 as NSString).appendingPathComponent($1) }) { event in
            switch event {
            case .failed(let path, let error):
                let why = error.call == "fstatat" ? error.reason : unlistable
                found.append(ReportInput(label: path, source: .refused(.unreadable(path, why))))
            case .tooDeep(let path):
                found.append(ReportInput(label: path, source: .refused(.unreadable(path, unlistable))))
            case .entry(let entry) where entry.kind == .symbolicLink:
                found.append(ReportInput(label: entry.path, source: .refused(.unreadable(
                    entry.path, "a symbolic link inside a directory is not followed (name the file itself to submit it)"))))
            case .entry(let entry):
                // FIFOs, sockets and devices too: `load` refuses them by type, without blocking.
                found.append(ReportInput(label: entry.path, source: .file(path: entry.path, followSymlink: false)))
            }
        }
        return found.sorted { $0.label < $1.label }
    }

    /// Reads stdin in chunks and stops past `limit`, so an endless pipe cannot exhaust memory.
    /// (gzip input is at most `limit` compressed bytes too: real reports compress, bombs are refused.)
    private static func readStandardInput(limit: Int, label: String) throws -> Data {
        var data = Data()
        while true {
            let chunk = FileHandle.standardInput.readData(ofLength: 1 << 16)
            if chunk.isEmpty { return data }
            data.append(chunk)
            if data.count > limit { throw SubmitError.tooLarge(label, limit) }
        }
    }

    /// A regular file's bytes, at most `limit` of them. Opened non-blocking, so a FIFO or
    /// device cannot hang the batch, then checked on the open descriptor itself (no window in
    /// which the path could be swapped for something else between the check and the read).
    private static func readRegularFile(_ path: String, followSymlink: Bool, limit: Int, label: String) throws -> Data {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (followSymlink ? 0 : O_NOFOLLOW))
        guard fd >= 0 else {
            let why = errno
            if why == ELOOP && !followSymlink {
                throw SubmitError.unreadable(label, "a symbolic link inside a directory is not followed")
            }
            var info = stat()
            if why == ENOENT, lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK {
                throw SubmitError.unreadable(label, "a symbolic link to a missing file")
            }
            throw SubmitError.unreadable(label, SystemCallError.reason(errno: why))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw SubmitError.unreadable(label, lastErrorText()) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw SubmitError.unreadable(label, "not a regular file (\(FileKind(mode: info.st_mode)))")
        }
        if info.st_size > limit { throw SubmitError.tooLarge(label, limit) }
        // The file may still grow while it is read: the limit applies to what is read.
        var data = Data(capacity: Int(info.st_size) + 1)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 { return data }
            if n < 0 {
                if errno == EINTR { continue }
                throw SubmitError.unreadable(label, lastErrorText())
            }
            data.append(contentsOf: chunk[0..<n])
            if data.count > limit { throw SubmitError.tooLarge(label, limit) }
        }
    }

    /// A regular file too large for `load` that is an ELF core, mapped rather than read:
    /// `submit` keeps only what the unwinder reads of it (`ElfCoreRewriting.slimmed`). Nil for
    /// anything else (stdin, gzip, other formats), which `load`'s refusal then stands for.
    func mappedCore() -> Data? {
        guard case .file(let path, _) = source,
            let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped),
            ElfCoreFormat().matches(data)
        else { return nil }
        return data
    }

    /// The report's bytes, gunzipped when they start with the gzip magic; never more than `limit`.
    func load(limit: Int) throws -> Data {
        let data: Data
        switch source {
        case .standardInput:
            data = try Self.readStandardInput(limit: limit, label: label)
        case .file(let path, let followSymlink):
            data = try Self.readRegularFile(path, followSymlink: followSymlink, limit: limit, label: label)
        case .refused(let error):
            throw error
        }
        guard Zlib.isGzip(data) else {
            guard data.count <= limit else { throw SubmitError.tooLarge(label, limit) }
            return data
        }
        do {
            return try Zlib.inflate(data, limit: limit)
        } catch {
            throw SubmitError.badGzip(label, error)
        }
    }
}

/// The text of the errno the last call set, for messages.
private func lastErrorText() -> String { SystemCallError.reason(errno: errno) }

/// Why `submit` refused an input.
enum SubmitError: Error, CustomStringConvertible {
    case unreadable(String, String)
    case tooLarge(String, Int)
    case badGzip(String, CompressionError)
    case unparseable(String, ParseRefusal)
    case exeNeedsCore(String)
    case exeDoesNotFit(String, String)

    var description: String {
        switch self {
        case .unreadable(let label, let why): "\(label): \(why)"
        case .tooLarge(let label, let limit): "\(label): larger than \(limit) bytes (raise --max-size to accept it)"
        case .badGzip(let label, let error): "\(label): gzip: \(error)"
        case .unparseable(let label, let error): "\(label): \(error)"
        case .exeNeedsCore(let label): "\(label): --exe applies to core files, and this is not one"
        case .exeDoesNotFit(let label, let why): "\(label): --exe: \(why)"
        }
    }
}
