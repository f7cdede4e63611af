import Hummingbird

/// `Cache-Control` of every answer to an authenticated request: `private`, so no shared cache
/// in front of the server (nginx, Caddy, a CDN) keeps a copy that it would then hand to a
/// client without the token. The web pages' stricter `no-store` is kept. One middleware for
/// every route that authenticates (API, debuginfod, web pages, with a bearer token or the
/// session cookie), not a header set route by route, so a new route cannot forget it.
///
/// It sits outside the request log, which turns errors into answers: an error answer of an
/// authenticated request (a 404 that says whether a build id is stored) is private too.
struct AnswerCaching: RouterMiddleware {
    typealias Context = StacklineRequestContext

    static let authenticated = "private"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        // Set by `RequireScope` and the web view's session check once the token is verified.
        guard context.facts.tokenId != nil else { return response }
        if response.headers[.cacheControl]?.contains("no-store") != true {
            response.headers[.cacheControl] = Self.authenticated
        }
        return response
    }
}
