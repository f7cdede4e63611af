import Foundation
import Hummingbird

/// An HTTP error answered as `{"error": message}` with its status (and headers, e.g. `Retry-After`).
/// Every route throws these; `RequestLogMiddleware` turns any other error into a 500 of the same shape.
public struct APIError: HTTPResponseError, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var message: String
    public var headers: HTTPFields

    public init(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    public var description: String { "\(status.code) \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        JSONResponse.error(status, message, headers: headers)
    }

    /// 401: no token, or one that is unknown, malformed or revoked.
    public static func unauthorized(_ why: String) -> APIError {
        APIError(.unauthorized, why, headers: [.wwwAuthenticate: #"Bearer realm="stackline""#])
    }

    public static func forbidden(_ why: String) -> APIError { APIError(.forbidden, why) }
    public static func badRequest(_ why: String) -> APIError { APIError(.badRequest, why) }
    public static func notFound(_ why: String) -> APIError { APIError(.notFound, why) }

    public static func tooLarge(limit: Int) -> APIError {
        APIError(.contentTooLarge, "body is larger than the limit of \(limit) bytes")
    }

    /// 429 with `Retry-After` in whole seconds (at least 1).
    public static func rateLimited(retryAfter seconds: Double) -> APIError {
        let whole = max(1, Int(seconds.rounded(.up)))
        return APIError(.tooManyRequests, "rate limit exceeded; retry after \(whole) s", headers: [.retryAfter: "\(whole)"])
    }
}
