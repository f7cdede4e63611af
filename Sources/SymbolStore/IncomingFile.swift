import DebugInfo
import Foundation
import SystemCalls

/// A request body on its way into the store, written chunk by chunk to a file in the store's
/// `.incoming` folder (on the store's own disk, never in memory), and read back from the same
/// open file once complete. The name is unlinked as soon as the file is open, so a crash or
/// a dropped connection leaves nothing behind. Sendable so a request handler can hand it to
/// the thread that writes; one request uses it at a time.
/// Sendable: every field is immutable after init; one request appends at a time (its handler hands it to the writing thread, never shares it).
public final class IncomingFile: @unchecked Sendable {
    /// Optional cap on one upload, in bytes (the store's free space caps it too).
    public static let limitVariable = "STACKLINE_SYMBOLS_MAX_UPLOAD_BYTES"
    /// The cap without the variable: larger than a real zip of an app's dSYMs.
    public static let defaultLimit: UInt64 = 8 << 30

    /// What the body is called in messages and the sidecars: the name the client gave.
    public let name: String
    /// The most this upload may hold, and how to say so.
    public let limit: UInt64
    public let limitName: String
    private let output: NewFile
    private let reader: Int32

    /// Opens a new incoming file in `store`; `name` labels it.
    public init(store: SymbolStoreDirectory, name: String) throws(StoreError) {
        self.name = name
        let folder = store.root + "/.incoming"
        do throws(SystemCallError) { try PrivateFiles.makeDirectory(folder) } catch {
            throw .io(path: folder, reason: "cannot create directory: \(error.reason)")
        }
        (limit, limitName) = try Self.limit(folder: folder, cap: store.limits.uploadMaxBytes)
        let path = folder + "/upload-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        output = try NewFile(path: path)
        reader = Foundation.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        let code = errno
        unlink(path)
        guard reader >= 0 else { throw .io(path: path, reason: "cannot reopen: \(RegularFile.openFailure(code))") }
    }

    deinit { if reader >= 0 { close(reader) } }

    /// Bytes written so far.
    public var written: UInt64 { output.written }

    /// Appends one chunk; past the limit nothing more is written and `.tooLarge` is thrown.
    public func append(_ bytes: some ContiguousBytes) throws(StoreError) {
        let count = bytes.withUnsafeBytes { $0.count }
        guard UInt64(count) <= limit - min(limit, written) else { throw .tooLarge(path: name, limit: limitName) }
        try output.write(bytes)
    }

    /// The body, read through the descriptor opened when it was created (the caller keeps
    /// it; this object may go).
    public func file() throws(StoreError) -> RegularFile {
        let fd = dup(reader)
        guard fd >= 0 else { throw .io(path: name, reason: "cannot reopen: \(SystemCallError.reason(errno: errno))") }
        do { return try RegularFile(adopting: fd, path: name) } catch { throw .io(path: name, reason: error.reason) }
    }

    /// STACKLINE_SYMBOLS_MAX_UPLOAD_BYTES or the default, and never more than the free space.
    public static func limit(folder: String, cap: String?) throws(StoreError) -> (UInt64, String) {
        var limit = (defaultLimit, "the upload cap of \(defaultLimit >> 30) GiB (\(limitVariable) sets another)")
        if let text = cap, !text.isEmpty {
            guard let bytes = UInt64(text) else { throw .io(path: folder, reason: "\(limitVariable)=\(text) is not a byte count") }
            limit = (bytes, "\(limitVariable)=\(bytes) bytes")
        }
        var fs = statvfs()
        if statvfs(folder, &fs) == 0 {
            let free = UInt64(fs.f_bavail) &* UInt64(fs.f_frsize)
            if free < limit.0 { limit = (free, "the \(free) bytes free in the store") }
        }
        return limit
    }
}
