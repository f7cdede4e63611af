import Compression
import Foundation
import ReportModel
import Hummingbird

/// Reads request bodies under a byte limit: a `Content-Length` over the limit is refused with
/// 413 before a byte is read, and a body without one (chunked) is counted while it streams
/// and refused as soon as it passes the limit, so no body is ever held whole past the limit.
public enum BodyReader {
    /// The body's bytes, at most `limit` of them.
    public static func read(_ request: Request, limit: Int) async throws -> Data {
        if let declared = request.headers[.contentLength] {
            guard let length = Int(declared), length >= 0 else { throw APIError.badRequest("Content-Length is not a number") }
            if length > limit { throw APIError.tooLarge(limit: limit) }
        }
        var data = Data()
        for try await chunk in request.body {
            guard data.count + chunk.readableBytes <= limit else { throw APIError.tooLarge(limit: limit) }
            data.append(contentsOf: chunk.readableBytesView)
        }
        return data
    }

    /// A report body: the bytes as the sender meant them, and the gzip they came in, if any.
    public struct ReportBody: Sendable {
        public var bytes: Data
        /// The body as received when it was gzip (it inflates to exactly `bytes`).
        public var gzip: Data?
    }

    /// The body as the sender meant it: inflated when `Content-Encoding: gzip` says so (or the
    /// bytes start with the gzip magic, as `submit` accepts), at most `inflatedLimit` bytes after
    /// inflating, on `blocking`'s threads. A gzip bomb is refused from its trailer, or once it
    /// inflates past the limit or a ratio no report reaches (`Zlib.inflateUntrusted`).
    public static func readReport(_ request: Request, limit: Int, inflatedLimit: Int, blocking: BlockingWork) async throws -> ReportBody {
        let encoding = request.headers[.contentEncoding]?.lowercased().trimmingWhitespace(newlines: false)
        switch encoding {
        case nil, "", "identity", "gzip", "x-gzip": break
        default: throw APIError(.unsupportedMediaType, "Content-Encoding \(encoding ?? "") is not supported (send gzip or plain bytes)")
        }
        let body = try await read(request, limit: limit)
        let gzip = encoding == "gzip" || encoding == "x-gzip"
        guard gzip || Zlib.isGzip(body) else { return ReportBody(bytes: body, gzip: nil) }
        let inflated = try await blocking.run {
            Result { () throws(CompressionError) in try Zlib.inflateUntrusted(body, limit: inflatedLimit) }
        }
        switch inflated {
        case .success(let bytes): return ReportBody(bytes: bytes, gzip: body)
        case .failure(.tooLarge): throw APIError(.contentTooLarge, "body inflates past the limit of \(inflatedLimit) bytes")
        case .failure(let error):
            if case .ratioTooHigh = error { throw APIError(.contentTooLarge, "body \(error)") }
            throw APIError.badRequest("gzip: \(error)")
        }
    }
}
