import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Server
import SymbolStore

/// Why a request to a `stackline serve` failed; reads as the end of "stackline …: ".
struct ServerClientError: Error, CustomStringConvertible {
    let description: String
}

/// The symbol endpoints of a `stackline serve`, as `symbols upload` calls them. The token goes
/// in `Authorization: Bearer` and nowhere else: not in URLs, messages or output.
struct ServerClient: Sendable {
    let base: URL
    private let token: String

    init(base: String, token: String) throws {
        guard let url = URL(string: base), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil
        else { throw ServerClientError(description: "--server \(base) is not an http:// or https:// URL") }
        guard !token.contains(where: { $0.isNewline || $0 == " " }) else {
            throw ServerClientError(description: "the token holds blanks or line breaks; pass the value `tokens create` printed")
        }
        self.base = url
        self.token = token
    }

    /// Which of `offers` the server wants (POST /api/v1/symbols/missing).
    func missing(_ offers: [StoreOffer]) throws -> MissingSymbolsAnswer {
        let body = try JSONEncoder().encode(offers)
        return try decode(MissingSymbolsAnswer.self, send(path: "api/v1/symbols/missing", body: .data(body), contentType: "application/json"))
    }

    /// Sends one file, streamed from disk (POST /api/v1/symbols?name=BASENAME).
    func upload(_ path: String, progress: @escaping @Sendable (Int64, Int64) -> Void) throws -> AddReport {
        let name = (path as NSString).lastPathComponent
        return try decode(
            AddReport.self,
            send(path: "api/v1/symbols", query: [URLQueryItem(name: "name", value: name)], body: .file(URL(fileURLWithPath: path)),
                contentType: "application/octet-stream", progress: progress))
    }

    /// The job states of `reportIds`, and how many jobs run (POST /api/v1/symbols/reprocessing).
    func reprocessing(_ reportIds: [Int64]) throws -> ReprocessingAnswer {
        let body = try JSONEncoder().encode(reportIds)
        return try decode(ReprocessingAnswer.self, send(path: "api/v1/symbols/reprocessing", body: .data(body), contentType: "application/json"))
    }

    enum Body {
        case data(Data)
        case file(URL)
    }

    private func url(_ path: String, query: [URLQueryItem]) throws -> URL {
        var components = URLComponents(url: base.appendingPathComponent(path), resolvingAgainstBaseURL: false)
        if !query.isEmpty { components?.queryItems = query }
        guard let url = components?.url else { throw ServerClientError(description: "cannot build a URL for \(path) on \(base)") }
        return url
    }

    /// One POST; the answer's body when the status is 2xx, else the server's `{"error": …}`.
    private func send(
        path: String, query: [URLQueryItem] = [], body: Body, contentType: String, progress: (@Sendable (Int64, Int64) -> Void)? = nil
    ) throws -> Data {
        var request = URLRequest(url: try url(path, query: query))
        request.httpMethod = "POST"
        request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization")
        request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        request.timeoutInterval = 3600
        let transfer = Transfer(progress: progress)
        let session = URLSession(configuration: .ephemeral, delegate: transfer, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task: URLSessionTask
        switch body {
        case .data(let data): task = session.uploadTask(with: request, from: data)
        case .file(let file): task = session.uploadTask(with: request, fromFile: file)
        }
        task.resume()
        transfer.finished.wait()
        let (status, data, error) = transfer.outcome
        if let error { throw ServerClientError(description: "\(request.url?.absoluteString ?? path): \(error.localizedDescription)") }
        guard let status else { throw ServerClientError(description: "\(path): no HTTP answer") }
        guard (200..<300).contains(status) else {
            let message = (try? JSONDecoder().decode([String: String].self, from: data))?["error"]
                ?? String(decoding: data.prefix(200), as: UTF8.self)
            throw ServerClientError(description: "the server answered \(status) to POST /\(path): \(message)")
        }
        return data
    }

    private func decode<T: Decodable>(_ type: T.Type, _ data: Data) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do { return try decoder.decode(type, from: data) } catch {
            throw ServerClientError(description: "the server's answer is not the expected JSON: \(error)")
        }
    }
}

/// Collects one task's answer and reports bytes sent.
private final class Transfer: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let finished = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var status: Int?
    private var data = Data()
    private var error: Error?
    private let progress: (@Sendable (Int64, Int64) -> Void)?

    init(progress: (@Sendable (Int64, Int64) -> Void)?) { self.progress = progress }

    var outcome: (Int?, Data, Error?) { lock.withLock { (status, data, error) } }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        progress?(totalBytesSent, totalBytesExpectedToSend)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        lock.withLock { status = (response as? HTTPURLResponse)?.statusCode }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.withLock { self.data.append(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        lock.withLock {
            self.error = error
            if status == nil { status = (task.response as? HTTPURLResponse)?.statusCode }
        }
        finished.signal()
    }
}
