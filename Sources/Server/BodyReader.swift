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
    /// Then `work` runs on the body in the same pool job as the inflate: one hop to the pool per
    /// request instead of two (scripts/bench-serve.sh, server CPU per accepted report).
    public static func readReport<T: Sendable>(
        _ request: Request, limit: Int, inflatedLimit: Int, blocking: BlockingWork,
        then work: @escaping @Sendable (ReportBody) throws -> T
    ) async throws -> T {
        let encoding = request.headers[.contentEncoding]?.lowercased().trimmingWhitespace(newlines: false)
        switch encoding {
        case nil, "", "identity", "gzip", "x-gzip": break
        default: throw APIError(.unsupportedMediaType, "Content-Encoding \(encoding ?? "") is not supported (send gzip or plain bytes)")
        }
        let body = try await read(request, limit: limit)
        let gzip = encoding == "gzip" || encoding == "x-gzip" || Zlib.isGzip(body)
        return try await blocking.run {
            guard gzip else { return try work(ReportBody(bytes: body, gzip: nil)) }
            let inflated: Data
            do throws(CompressionError) { inflated = try Zlib.inflateUntrusted(body, limit: inflatedLimit) } catch .tooLarge {
                throw APIError(.contentTooLarge, "body inflates past the limit of \(inflatedLimit) bytes")
            } catch {
                if case .ratioTooHigh = error { throw APIError(.contentTooLarge, "body \(error)") }
                throw APIError.badRequest("gzip: \(error)")
            }
            return try work(ReportBody(bytes: inflated, gzip: body))
        }
    }
}
