import DebugInfo
import Foundation
import HTTPTypes
import Hummingbird
import ReportModel
import SymbolStore
import SystemCalls

/// The debuginfod web API (elfutils `debuginfod(8)`): `GET /buildid/ID/debuginfo` and
/// `GET /buildid/ID/executable` serve the store's two roles, and `GET /buildid/ID/section/NAME`
/// one ELF section's bytes from them, so gdb, `debuginfod-find`, eu-stack and
/// systemd-coredump can use Stackline as their symbol server.
///
/// Scope `read` (or `worker`: remote workers fetch here): debuginfod clients send no token of their own, but libdebuginfod (elfutils
/// ≥ 0.185; Debian 12 has 0.188) adds the lines of `$DEBUGINFOD_HEADERS_FILE` to every request,
/// so `Authorization: Bearer TOKEN` travels in that file (docs/symbols-server.md).
func addDebuginfodRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    // Remote workers fetch the debug files their jobs need here, with their `worker` token.
    let read = router.group("/buildid").add(middleware: RequireScope(.read, also: [.worker], deps))
    for (path, role) in [("debuginfo", SymbolStoreDirectory.Role.debugInfo), ("executable", .executable)] {
        read.get("/:id/\(path)") { request, context in
            try await Debuginfod.serve(request, id: context.parameters.get("id"), role: role, deps: deps)
        }
    }
    read.get("/:id/section/:section") { request, context in
        try await Debuginfod.serveSection(request, id: context.parameters.get("id"), name: context.parameters.get("section"), deps: deps)
    }
}

/// One file served: its headers and, unless the request was HEAD, its bytes, streamed.
enum Debuginfod {
    /// Bytes read from disk and written to the connection at a time.
    static let chunkSize = 256 << 10

    static func serve(_ request: Request, id text: String?, role: SymbolStoreDirectory.Role, deps: ServerDependencies) async throws
        -> Response
    {
        let id = try buildID(text ?? "")
        let served = try await deps.blocking.run { () throws -> ServedFile in
            guard let file = try servable(id, deps, { try deps.store.open(id, role: role) }) else { throw APIError.notFound("no \(role == .debugInfo ? "debuginfo" : "executable") for build id \(id)") }
            // The `.debug` role may hold a stripped image when nothing better was added: it is no debuginfo.
            if role == .debugInfo, let entry = deps.store.entry(buildID: id), !entry.hasDWARF && !entry.hasSymbolTable {
                throw APIError.notFound("the store holds no debug information for build id \(id), only an image")
            }
            return ServedFile(file: file)
        }
        return respond(
            request, served, file: SymbolStoreDirectory.layoutPath(id, role: role), kind: role == .debugInfo ? "debuginfo" : "executable",
            blocking: deps.blocking)
    }

    /// The bytes of section `name`, as debuginfod(8) specifies: from the debuginfo file, else
    /// (absent there, or `SHT_NOBITS` as in an `--only-keep-debug` file) from the executable.
    /// The contents are the section's bytes in the file, not wrapped in ELF. A compressed
    /// section (`SHF_COMPRESSED`) is not served (404 saying so): its stored bytes are not its
    /// contents, and a client can fetch the whole file instead.
    static func serveSection(_ request: Request, id text: String?, name: String?, deps: ServerDependencies) async throws -> Response {
        let id = try buildID(text ?? "")
        // The router hands the path segment over still percent-encoded.
        guard let name = (name ?? "").removingPercentEncoding else {
            throw APIError.badRequest("not a section name: bad percent-encoding")
        }
        // Section names are short printable ASCII (`.debug_info`, `.gnu_debugdata`).
        guard !name.isEmpty, name.utf8.count <= 256, name.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
            throw APIError.badRequest("not a section name: expected up to 256 printable ASCII characters")
        }
        let (served, role) = try await deps.blocking.run { () throws -> (ServedFile, SymbolStoreDirectory.Role) in
            var compressed = false
            for role in [SymbolStoreDirectory.Role.debugInfo, .executable] {
                // A Mach-O file has no ELF sections to give.
                guard let file = try servable(id, deps, { try deps.store.open(id, role: role) }), let elf = try? ElfFile(file: file) else {
                    continue
                }
                guard let section = elf.sections.first(where: { $0.name == name && $0.hasFileContents }) else { continue }
                if section.isCompressed {
                    compressed = true
                    continue
                }
                guard section.offset <= file.size, section.size <= file.size - section.offset else {
                    throw APIError.notFound("section \(name) of build id \(id) lies outside its file")
                }
                return (ServedFile(file: file, start: section.offset, length: section.size), role)
            }
            throw APIError.notFound(compressed
                ? "section \(name) of build id \(id) is compressed in the stored file; fetch the debuginfo or executable instead"
                : "no section \(name) with contents in the debuginfo or executable of build id \(id)")
        }
        return respond(request, served, file: SymbolStoreDirectory.layoutPath(id, role: role), kind: "section", blocking: deps.blocking)
    }

    /// What `open` (the store's) opened for `id`, nil when the store has none. A link or a swapped
    /// file is never served: 500, logged (the store refuses to open it).
    private static func servable(_ id: BuildID, _ deps: ServerDependencies, _ open: () throws -> RegularFile?) throws -> RegularFile? {
        do { return try open() } catch {
            deps.logger.error("debuginfod: stored file not served", metadata: ["error": "\(error)"])
            throw APIError(.internalServerError, "the stored file for \(id) cannot be served: it changed since it was stored")
        }
    }

    /// The response for `served`'s bytes: headers, a single `Range`, and the bytes streamed
    /// in chunks (none for HEAD: the router runs this GET route for HEAD too). `Cache-Control:
    /// private` is `AnswerCaching`'s, as on every authenticated answer. `kind` labels the served-files metric;
    /// the chunks are read on `blocking`.
    private static func respond(
        _ request: Request, _ served: ServedFile, file storedName: String, kind: String, blocking: BlockingWork
    ) -> Response {
        let size = served.length
        var headers: HTTPFields = [
            .contentType: "application/octet-stream",
            .acceptRanges: "bytes",
            HTTPField.Name("X-Debuginfod-Size")!: "\(size)",
            // The name in the store, not the server's path: `.build-id/ab/cdef….debug`.
            HTTPField.Name("X-Debuginfod-File")!: storedName,
        ]
        let modified = served.modified
        if let modified { headers[.lastModified] = httpDate(modified) }

        var range: ClosedRange<UInt64>? = nil
        if let value = request.headers[.range], size > 0, ifRangeHolds(request, lastModified: headers[.lastModified]) {
            switch ByteRange.parse(value, size: size) {
            case .whole: break
            case .part(let part): range = part
            case .unsatisfiable:
                return Response(status: .rangeNotSatisfiable, headers: [.contentRange: "bytes */\(size)", .contentLength: "0"])
            }
        }
        let sent = range ?? (size == 0 ? nil : 0...(size - 1))
        let length = sent.map { $0.upperBound - $0.lowerBound + 1 } ?? 0
        headers[.contentLength] = "\(length)"
        if let range { headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)" }
        let status: HTTPResponse.Status = range == nil ? .ok : .partialContent
        ServerMetrics.debugFileServed(kind: kind)
        guard request.method != .head, let sent else { return Response(status: status, headers: headers, body: .init()) }

        let body = ResponseBody(contentLength: Int(length)) { connection in
            var offset = sent.lowerBound
            while offset <= sent.upperBound {
                let count = Int(min(UInt64(chunkSize), sent.upperBound - offset + 1))
                let at = offset
                let chunk = try await blocking.run { try served.read(at: at, count: count) }
                try await connection.write(chunk)
                offset += UInt64(count)
            }
            try await connection.finish(nil)
        }
        return Response(status: status, headers: headers, body: body)
    }

    /// The id of the path: lowercase hex only, as debuginfod clients send it (400 otherwise),
    /// then normalised through `BuildID` like every other id.
    static func buildID(_ text: String) throws -> BuildID {
        let lowercaseHex = !text.isEmpty && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        guard lowercaseHex, let id = try? BuildID(text, lengths: .anyByteCount) else {
            throw APIError.badRequest("not a build id: expected lowercase hex digits, an even number of at least 4")
        }
        return id
    }

    /// `If-Range` holds when absent or equal to the file's `Last-Modified` (the only validator
    /// sent); otherwise the whole file is sent, as RFC 9110 §13.1.5 asks.
    private static func ifRangeHolds(_ request: Request, lastModified: String?) -> Bool {
        guard let condition = request.headers[.ifRange] else { return true }
        return condition == lastModified
    }

    private static func httpDate(_ seconds: Int) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }
}

/// The open stored file a response streams from; kept open until the body is written.
/// Sendable: immutable after init, and `read` uses `pread`, which moves no shared file offset.
final class ServedFile: @unchecked Sendable {
    let file: RegularFile
    let modified: Int?
    /// The bytes served: the whole file, or one section of it.
    let start: UInt64
    let length: UInt64

    init(file: RegularFile, start: UInt64 = 0, length: UInt64? = nil) {
        self.file = file
        modified = try? SystemCall.status(of: file.descriptor, path: file.path).st_mtim.tv_sec
        self.start = start
        self.length = length ?? file.size
    }

    /// `count` bytes at `offset` of the served bytes; a file cut short since it was opened ends
    /// the response in an error.
    func read(at offset: UInt64, count: Int) throws -> ByteBuffer {
        let offset = start + offset
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        var done = 0
        while done < count {
            let n = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - done) { target in
                pread(file.descriptor, target.baseAddress!, count - done, off_t(offset) + off_t(done))
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw SystemCallError(call: "pread", path: file.path, errno: n < 0 ? errno : EIO)
            }
            done += n
        }
        return buffer
    }
}

/// A `Range: bytes=…` header against a file of `size` bytes (RFC 9110 §14.1.2).
enum ByteRange: Equatable {
    /// Send the whole file: no usable single range (another unit, several ranges, bad syntax).
    case whole
    case part(ClosedRange<UInt64>)
    /// 416: the range starts past the end.
    case unsatisfiable

    static func parse(_ header: String, size: UInt64) -> ByteRange {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes="), size > 0 else { return .whole }
        let spec = value.dropFirst(6).trimmingCharacters(in: .whitespaces)
        // Several ranges would need a multipart answer; sending the whole file is allowed instead.
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        let digits = { (s: String) in !s.isEmpty && s.utf8.allSatisfy { (0x30...0x39).contains($0) } }
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard digits(last), let n = UInt64(last) else { return .whole }
            guard n > 0 else { return .unsatisfiable }
            return .part((size - min(n, size))...(size - 1))
        }
        guard digits(first), let start = UInt64(first), last.isEmpty || digits(last) else { return .whole }
        let end = last.isEmpty ? size - 1 : min(UInt64(last) ?? .max, size - 1)
        guard start < size else { return .unsatisfiable }
        guard start <= end else { return .whole }
        return .part(start...end)
    }
}
