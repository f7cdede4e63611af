import Foundation
import JSONFormat
import ReportModel
import SystemCalls
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Why a request to a `stackline serve` failed; reads as the end of "stackline …: ".
public struct ServiceClientError: Error, CustomStringConvertible, Sendable {
    /// Where it failed: before an HTTP answer (connection refused, reset, timed out), or with
    /// an answer whose status is not 2xx.
    public enum Kind: Sendable, Equatable {
        case transport
        case status(Int)
    }

    public let kind: Kind
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// The HTTP status, when the server answered.
    public var status: Int? {
        if case .status(let s) = kind { return s }
        return nil
    }
}

/// An HTTP client of one `stackline serve`: the CLI's `symbols upload` and a remote
/// `stackline-worker` both talk through it. The token goes in `Authorization: Bearer` and
/// nowhere else: not in URLs, messages or logs.
///
/// Built on Foundation's URLSession (libcurl underneath on Linux), which the CLI already used:
/// a worker binary needs no NIO stack of its own. One session per client keeps connections
/// alive across requests.
public final class ServiceClient: Sendable {
    public let base: URL
    /// Sent with every request: `Authorization: Bearer TOKEN` for a Stackline server, or a
    /// symbol source's own headers.
    private let headers: [(name: String, value: String)]
    private let session: URLSession
    private let router = TransferRouter()

    /// An answer with any status.
    public struct Response: Sendable {
        public var status: Int
        public var body: Data
        public var headers: [String: String]

        /// The server's `{"error": …}` message, else the start of the body.
        public var errorMessage: String {
            (try? JSONDecoder().decode([String: String].self, from: body))?["error"]
                ?? TerminalText.escape(String(decoding: body.prefix(200), as: UTF8.self))
        }
    }

    /// What a request sends.
    public enum Body: Sendable {
        case none
        case data(Data, contentType: String)
        /// Streamed from disk.
        case file(URL, contentType: String)
    }

    /// `option` names where the URL came from (`--server`, `--connect`) in the error.
    public convenience init(base: String, token: String, option: String = "--server") throws(ServiceClientError) {
        _ = try Self.validated(base, option: option)
        guard !token.isEmpty, !token.contains(where: { $0.isNewline || $0 == " " || $0 == "\t" }) else {
            throw ServiceClientError(.transport, "the token is empty or holds blanks or line breaks; pass the value `tokens create` printed")
        }
        try self.init(base: base, headers: ["Authorization": "Bearer " + token], option: option)
    }

    /// A client that sends `headers` with every request and no token of its own (a symbol
    /// source: a debuginfod server, perhaps behind a proxy that wants its own header).
    /// Header names are HTTP tokens and values hold no line breaks, so none can add a header.
    public init(base: String, headers: [String: String], option: String) throws(ServiceClientError) {
        let url = try Self.validated(base, option: option)
        for (name, value) in headers {
            let token = !name.isEmpty && name.utf8.allSatisfy { byte in
                (0x21...0x7e).contains(byte) && !"()<>@,;:\\\"/[]?={}".utf8.contains(byte)
            }
            guard token, !value.contains(where: { $0.isNewline || $0 == "\0" }) else {
                throw ServiceClientError(.transport, "\(option) \(TerminalText.escape(base)): header \(TerminalText.escape(name)) is not a valid HTTP header")
            }
        }
        self.base = url
        self.headers = headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 16
        // One session delegate that hands each task's events to its `Transfer`: corelibs
        // Foundation does not call per-task delegates.
        session = URLSession(configuration: configuration, delegate: router, delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    /// `base` as an http:// or https:// URL with a host.
    private static func validated(_ base: String, option: String) throws(ServiceClientError) -> URL {
        guard let url = URL(string: base), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host != nil
        else { throw ServiceClientError(.transport, "\(option) \(TerminalText.escape(base)) is not an http:// or https:// URL") }
        return url
    }

    /// The URL of `path` (relative to the base) with `query`.
    public func url(_ path: String, query: [URLQueryItem] = []) throws(ServiceClientError) -> URL {
        var components = URLComponents(url: base.appendingPathComponent(path), resolvingAgainstBaseURL: false)
        if !query.isEmpty { components?.queryItems = query }
        guard let url = components?.url else { throw ServiceClientError(.transport, "cannot build a URL for \(path) on \(base)") }
        return url
    }

    /// One request; any HTTP status is an answer (callers decide), only no answer throws.
    public func send(
        _ method: String, _ path: String, query: [URLQueryItem] = [], body: Body = .none, timeout: Double = 60,
        progress: (@Sendable (Int64, Int64) -> Void)? = nil
    ) throws(ServiceClientError) -> Response {
        var request = URLRequest(url: try url(path, query: query))
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.timeoutInterval = timeout
        let transfer = Transfer(progress: progress)
        let task: URLSessionTask
        switch body {
        case .none:
            task = session.dataTask(with: request)
        case .data(let data, let contentType):
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
            task = session.uploadTask(with: request, from: data)
        case .file(let file, let contentType):
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
            task = session.uploadTask(with: request, fromFile: file)
        }
        router.attach(transfer, to: task)
        task.resume()
        transfer.finished.wait()
        router.detach(task)
        let (status, data, headers, error) = transfer.outcome
        if let error {
            throw ServiceClientError(.transport, "\(method) /\(path): \(error.localizedDescription)")
        }
        guard let status else { throw ServiceClientError(.transport, "\(method) /\(path): no HTTP answer") }
        return Response(status: status, body: data, headers: headers)
    }

    /// `send`, with any status but 2xx thrown as `.status` with the server's message.
    public func expectSuccess(
        _ method: String, _ path: String, query: [URLQueryItem] = [], body: Body = .none, timeout: Double = 60,
        progress: (@Sendable (Int64, Int64) -> Void)? = nil
    ) throws(ServiceClientError) -> Data {
        let response = try send(method, path, query: query, body: body, timeout: timeout, progress: progress)
        guard (200..<300).contains(response.status) else {
            throw ServiceClientError(
                .status(response.status), "the server answered \(response.status) to \(method) /\(path): \(response.errorMessage)")
        }
        return response.body
    }

    /// POSTs `value` as JSON and decodes the 2xx answer as `T`.
    public func postJSON<T: Decodable>(
        _ path: String, _ value: some Encodable, as type: T.Type, timeout: Double = 60
    ) throws(ServiceClientError) -> T {
        let body: Data
        do { body = try JSONStyle.compact.encode(value) } catch {
            throw ServiceClientError(.transport, "cannot encode the request to /\(path): \(error)")
        }
        return try Self.decode(type, try expectSuccess("POST", path, body: .data(body, contentType: "application/json"), timeout: timeout))
    }

    /// Decodes a server answer, dates as ISO 8601 as the API writes them.
    public static func decode<T: Decodable>(_ type: T.Type, _ data: Data) throws(ServiceClientError) -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do { return try decoder.decode(type, from: data) } catch {
            throw ServiceClientError(.transport, "the server's answer is not the expected JSON: \(error)")
        }
    }

    /// GETs `path` into a new file at `destination`, at most `maxBytes` of body (more is
    /// refused and the file removed). Returns the status; the file exists only after a 200.
    public func download(_ path: String, to destination: String, maxBytes: Int64, timeout: Double = 600) throws(ServiceClientError) -> Int {
        var request = URLRequest(url: try url(path))
        request.httpMethod = "GET"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.timeoutInterval = timeout
        let sink: FileSink
        do { sink = try FileSink(path: destination, maxBytes: maxBytes) } catch {
            throw ServiceClientError(.transport, "cannot create \(destination): \(error)")
        }
        let transfer = Transfer(progress: nil, sink: sink)
        let task = session.dataTask(with: request)
        router.attach(transfer, to: task)
        task.resume()
        transfer.finished.wait()
        router.detach(task)
        let (status, _, _, error) = transfer.outcome
        sink.close()
        let keep = error == nil && status == 200 && !sink.overflowed
        if !keep { unlink(destination) }
        if sink.overflowed {
            throw ServiceClientError(.transport, "GET /\(path): the file is over \(maxBytes) bytes")
        }
        if let failure = sink.failure { throw ServiceClientError(.transport, "writing \(destination): \(failure)") }
        if let error { throw ServiceClientError(.transport, "GET /\(path): \(error.localizedDescription)") }
        guard let status else { throw ServiceClientError(.transport, "GET /\(path): no HTTP answer") }
        return status
    }
}

/// Writes a download to disk as it arrives, up to a byte limit.
/// Sendable: `lock` guards the descriptor and counts while the delegate writes; `overflowed` and `failure` are read after the transfer's `finished` semaphore, which orders them.
private final class FileSink: @unchecked Sendable {
    private let lock = NSLock()
    private var fd: Int32
    private let maxBytes: Int64
    private var written: Int64 = 0
    private(set) var overflowed = false
    private(set) var failure: String?

    init(path: String, maxBytes: Int64) throws(SystemCallError) {
        fd = try SystemCall.check("open", path: path) { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, PrivateFiles.fileMode) }
        self.maxBytes = maxBytes
    }

    /// False once the limit is passed or a write failed: the transfer is then cancelled.
    func append(_ data: Data) -> Bool {
        lock.withLock {
            guard fd >= 0, !overflowed, failure == nil else { return false }
            written += Int64(data.count)
            if written > maxBytes {
                overflowed = true
                return false
            }
            let failed: SystemCallError? = data.withUnsafeBytes { buf in
                do throws(SystemCallError) { try SystemCall.writeAll(fd, buf) } catch { return error }
                return nil
            }
            let ok = failed == nil
            if let failed { failure = failed.description }
            return ok
        }
    }

    func close() {
        lock.withLock {
            if fd >= 0 { _ = Foundation.close(fd) }
            fd = -1
        }
    }
}

/// Collects one task's answer; reports bytes sent; streams a download into a sink.
/// Sendable: `lock` guards `status`, `headers`, `data` and `error`; `progress` and `sink` are immutable.
private final class Transfer: @unchecked Sendable {
    let finished = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var status: Int?
    private var headers: [String: String] = [:]
    private var data = Data()
    private var error: Error?
    private let progress: (@Sendable (Int64, Int64) -> Void)?
    private let sink: FileSink?

    init(progress: (@Sendable (Int64, Int64) -> Void)?, sink: FileSink? = nil) {
        self.progress = progress
        self.sink = sink
    }

    var outcome: (Int?, Data, [String: String], Error?) { lock.withLock { (status, data, headers, error) } }
}

/// The session's delegate: finds the `Transfer` of each task by its identifier.
/// Sendable: `lock` guards `transfers`.
private final class TransferRouter: NSObject, @unchecked Sendable {
    private let lock = NSLock()
    private var transfers: [Int: Transfer] = [:]

    func attach(_ transfer: Transfer, to task: URLSessionTask) { lock.withLock { transfers[task.taskIdentifier] = transfer } }
    func detach(_ task: URLSessionTask) { _ = lock.withLock { transfers.removeValue(forKey: task.taskIdentifier) } }
    private func transfer(_ task: URLSessionTask) -> Transfer? { lock.withLock { transfers[task.taskIdentifier] } }
}

extension TransferRouter: URLSessionDataDelegate {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        transfer(task)?.sent(totalBytesSent, of: totalBytesExpectedToSend)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        transfer(dataTask)?.received(response)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        transfer(dataTask)?.received(data, task: dataTask)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        transfer(task)?.completed(task, error: error)
    }
}

extension Transfer {
    func sent(_ total: Int64, of expected: Int64) { progress?(total, expected) }

    func received(_ response: URLResponse) {
        lock.withLock {
            if let http = response as? HTTPURLResponse {
                status = http.statusCode
                for (key, value) in http.allHeaderFields {
                    if let key = key as? String, let value = value as? String { headers[key.lowercased()] = value }
                }
            }
        }
    }

    func received(_ data: Data, task: URLSessionDataTask) {
        let status = lock.withLock { self.status }
        // Only a 200's body goes to the file; an error's body is kept for its message.
        if let sink, status == 200 {
            if !sink.append(data) { task.cancel() }
            return
        }
        lock.withLock { if self.data.count < 1 << 20 || sink == nil { self.data.append(data) } }
    }

    func completed(_ task: URLSessionTask, error: Error?) {
        lock.withLock {
            self.error = error
            if status == nil { status = (task.response as? HTTPURLResponse)?.statusCode }
        }
        finished.signal()
    }
}
