import Foundation
import Hummingbird
import Logging
import Storage

/// The outermost middleware: turns every error into a `{"error": …}` response, counts the
/// request in `/metrics`, and logs one line per request (method, path, status, bytes, ms).
/// Never the query string, headers, token secret or body: they may carry secrets or report
/// data. The token's id is logged, so requests can be told apart per client.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = StacklineRequestContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let started = DispatchTime.now().uptimeNanoseconds
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as APIError {
            response = JSONResponse.error(error.status, error.message, headers: error.headers)
        } catch let error as StorageError where error.isUnavailable {
            // The database is down or unreachable (PostgreSQL restarting, a network cut): the
            // client's retry will be answered once it is back; SDKs keep the reports meanwhile.
            logger.warning("request failed: database unavailable", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            response = JSONResponse.error(.serviceUnavailable, "the database is unavailable; retry later", headers: [.retryAfter: "5"])
        } catch let error as HTTPResponseError {
            // Hummingbird's own (404 for unknown routes, 405): same JSON shape as ours.
            response = JSONResponse.error(error.status, error.status.reasonPhrase)
        } catch {
            logger.error("request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            response = JSONResponse.error(.internalServerError, "internal error")
        }
        let ms = Double(DispatchTime.now().uptimeNanoseconds - started) / 1_000_000
        let route = context.endpointPath ?? "unmatched"
        ServerMetrics.request(route: route, method: request.method.rawValue, status: response.status.code)
        // The line's metadata shows in an ingest request's profile (scripts/bench-serve.sh):
        // build it only when it is logged.
        guard logger.logLevel <= .info else { return response }
        var metadata: Logger.Metadata = [
            "method": "\(request.method.rawValue)", "path": "\(request.uri.path)", "status": "\(response.status.code)",
            "bytes": "\(response.body.contentLength.map(String.init) ?? "-")", "ms": "\(String(format: "%.1f", ms))",
        ]
        // The token's id (as `tokens list` shows it), never its secret.
        if let id = context.facts.tokenId { metadata["token"] = "\(id)" }
        logger.info("request", metadata: metadata)
        return response
    }
}
