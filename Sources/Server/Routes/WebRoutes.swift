import Foundation
import HTTPTypes
import Hummingbird
import Storage
import Logging
import Master
import APIModel
import Presentation
import ReportModel
import ReportQuery
import WebView

/// The web view (docs/web.md): server-rendered pages under `/` for people, behind a `read`
/// token given once at `/login` (then a session cookie, see `WebSession`) or as
/// `Authorization: Bearer` on every request. GET pages, the sign-in/out forms and a group's
/// triage forms (a `triage` token, same origin, a CSRF token: docs/triage.md); the
/// pages read through the same queries as the API, and WebView renders them.
func addWebRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    let sessions = WebSession(key: deps.sessionKey, tokens: deps.queries.tokens, blocking: deps.blocking)
    let web = router.group("").add(middleware: WebHeaders(logger: deps.logger))

    web.get("/login") { request, _ in
        WebPage.html(Layout.login(error: nil, next: WebPage.localPath(QueryParameters(request).string("next"))))
    }

    web.post("/login") { request, _ -> Response in
        try WebPage.requireSameOrigin(request)
        let body = try await BodyReader.read(request, limit: 4096)
        let presented = WebForm.field("token", in: body)?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let next = WebPage.localPath(WebForm.field("next", in: body))
        // A token is 256 random bits: guessing is hopeless, so no per-address login limit.
        guard let token = try await deps.blocking.run({ try deps.queries.tokens.verify(presented) }) else {
            return WebPage.html(
                Layout.login(error: "That token is not valid (unknown, malformed or revoked).", next: next), status: .unauthorized)
        }
        guard token.scope.permits(.read) else {
            return WebPage.html(
                Layout.login(error: "Token \(token.id) has scope \(token.scope.rawValue); the web view needs read.", next: next),
                status: .forbidden)
        }
        var response = WebPage.redirect(next ?? "/")
        response.headers[values: .setCookie].append(
            WebPage.cookie(sessions.value(for: token, now: deps.clock.now()), maxAge: Int(WebSession.lifetimeMs / 1000), request: request, servesTLS: deps.servesTLS))
        return response
    }

    web.post("/logout") { request, _ -> Response in
        try WebPage.requireSameOrigin(request)
        // Ended on the server too: a copy of the cookie stops working with the browser's.
        let cookie = request.cookies[WebSession.cookieName]?.value
        if let token = try await sessions.token(of: cookie, now: deps.clock.now()) {
            try await sessions.endSessions(of: token.id, now: deps.clock.now())
        }
        var response = WebPage.redirect("/login")
        response.headers[values: .setCookie].append(WebPage.cookie("", maxAge: 0, request: request, servesTLS: deps.servesTLS))
        return response
    }

    web.get("/static/{name}") { _, context -> Response in
        let name = try context.parameters.require("name")
        guard let file = WebAssets.file(named: name) else { return WebPage.html(Layout.message(title: "Not found", "No such file."), status: .notFound) }
        return JSONResponse.text(file.body, contentType: file.contentType)
    }

    // Every page is built on the pool: its queries, the stored result's decoding and the
    // rendering (a flame graph's layout is the costly part) are blocking work alike.
    let pages = web.group("").add(middleware: WebAuthentication(deps: deps, sessions: sessions))

    pages.get("/") { request, _ -> Response in
        let q = QueryParameters(request)
        let form = GroupsFilterForm(
            kind: q.string("kind") ?? "", app: q.string("app") ?? "", version: q.string("version") ?? "",
            namespace: q.string("namespace") ?? "", since: q.string("since") ?? "")
        let pageSize = min(max(Int(q.string("per_page") ?? "") ?? GroupsPageModel.defaultPerPage, 1), 100)
        var filterError: String?
        var filter = GroupFilter(app: form.app.nilIfEmpty, version: form.version.nilIfEmpty, namespace: form.namespace.nilIfEmpty)
        if !form.kind.isEmpty {
            if let kind = ReportKind(rawValue: form.kind) { filter.kind = kind } else { filterError = "Kind must be crash or lag." }
        }
        if !form.since.isEmpty {
            if let since = SinceDate(argument: form.since) { filter.since = since.milliseconds(now: deps.clock.now()) } else {
                filterError = "Since must be a duration (30m, 24h, 7d, 2w) or a date (2026-11-01)."
            }
        }
        // Paging over the API's own query: ask for this page and one more row (to know whether
        // a next page exists), and drop the pages before. 10,000 is the API's own limit.
        let page = min(max(Int(q.string("page") ?? "") ?? 1, 1), (10_000 - 1) / pageSize)
        filter.limit = page * pageSize + 1
        return try await deps.blocking.run { [filter, filterError] in
            let all = filterError == nil ? try deps.queries.groups(filter) : []
            let shown = Array(all.dropFirst((page - 1) * pageSize).prefix(pageSize)).map(GroupJSON.init)
            let days = 14
            let trends = try deps.queries.dailyCounts(fingerprints: shown.map(\.fingerprint), days: days, now: deps.clock.now())
            return WebPage.html(GroupsPage.render(GroupsPageModel(
                groups: shown, trends: trends, trendDays: days, filter: form, page: page, perPage: pageSize,
                hasNextPage: all.count > page * pageSize,
                filterError: filterError)))
        }
    }

    pages.get("/groups/{fingerprint}") { request, context -> Response in
        let fingerprint = try context.parameters.require("fingerprint")
        // The triage forms, for a token that may use them; a page asked for with a bearer
        // header posts with it too and needs no CSRF token.
        let actions = context.token?.scope.permits(.triage) == true
            ? GroupActions(csrf: request.cookies[WebSession.cookieName].map { sessions.csrfToken(cookie: $0.value) } ?? "") : nil
        return try await deps.blocking.run {
            let detail: GroupDetail
            do {
                guard let found = try deps.queries.group(fingerprint: fingerprint) else {
                    return WebPage.html(Layout.message(title: "No such group", "No group has the fingerprint \(fingerprint)."), status: .notFound)
                }
                detail = found
            } catch let error as GroupQueryError {
                return WebPage.html(Layout.message(title: "Which group?", error.description), status: .badRequest)
            }
            let representative = try detail.summary.representativeReportId.flatMap { try deps.queries.result(reportId: $0) }
                .map { try ReportPrinter.decode($0) }
            let appVersions = try deps.queries.appVersionCounts(app: detail.summary.app, kind: detail.summary.kind)
            let history = VersionHistory.analyse(
                groupVersions: detail.summary.versions, appVersions: appVersions,
                firstVersion: try deps.queries.firstVersion(fingerprint: detail.summary.fingerprint))
            let changes = try deps.queries.groupHistory(fingerprint: detail.summary.fingerprint, limit: 50)
            let facets = try WebSearch.facetKeys.compactMap {
                try deps.queries.facets(key: $0, query: .all, fingerprint: detail.summary.fingerprint, top: WebSearch.facetTop).map(FacetsJSON.init)
            }
            return WebPage.html(GroupPage.render(GroupPageModel(
                detail: GroupDetailJSON(detail, representative: representative, history: changes), history: history,
                appVersions: appVersions.keys.sorted(by: VersionOrder.less), actions: actions, facets: facets)))
        }
    }

    // The search language over every report, with its facets (docs/search.md).
    pages.get("/search") { request, _ -> Response in
        let q = QueryParameters(request)
        let expression = q.string("where") ?? ""
        let cursor = q.string("cursor").flatMap { Int64($0) }.flatMap { $0 > 0 ? $0 : nil }
        let query: ReportQuery
        do { query = try ReportQuery.parse(expression) } catch {
            return WebPage.html(SearchPage.render(SearchPageModel(expression: expression, error: "\(error)", results: nil, facets: [])))
        }
        return try await deps.blocking.run {
            let page = try deps.queries.searchReports(query, limit: WebSearch.pageSize, after: cursor)
            let facets = try WebSearch.facetKeys.compactMap {
                try deps.queries.facets(key: $0, query: query, fingerprint: nil, top: WebSearch.facetTop).map(FacetsJSON.init)
            }
            return WebPage.html(SearchPage.render(SearchPageModel(
                expression: expression, error: nil, results: ReportSearchJSON(page), facets: facets)))
        }
    }

    // Release health per version, as `GET /api/v1/releases` answers it.
    pages.get("/releases") { request, _ -> Response in
        let app = QueryParameters(request).string("app").flatMap { $0.utf8.count <= 256 ? $0 : nil }
        return try await deps.blocking.run {
            WebPage.html(ReleasesPage.render(try deps.queries.releaseHealth(app: app, namespace: nil).map(ReleaseHealthJSON.init), app: app))
        }
    }

    // The triage forms of a group's page (docs/triage.md): a `triage` or `admin` token, a
    // same-origin POST, and the session's CSRF token; then back to the page (303).
    pages.post("/groups/{fingerprint}/actions") { request, context -> Response in
        try WebPage.requireSameOrigin(request)
        let fingerprint = try context.parameters.require("fingerprint")
        let token = try context.requireToken()
        guard token.scope.permits(.triage) else {
            return WebPage.html(
                Layout.message(title: "Not allowed", "Token \(token.id) has scope \(token.scope.rawValue); changing a group needs triage."),
                status: .forbidden)
        }
        let body = try await BodyReader.read(request, limit: TriageRequests.maxBodyBytes)
        if request.headers[.authorization] == nil {
            let cookie = request.cookies[WebSession.cookieName]?.value ?? ""
            guard sessions.csrfMatches(cookie: cookie, presented: WebForm.field("csrf", in: body) ?? "") else {
                return WebPage.html(Layout.message(title: "Form expired", "Reload the group's page and try again."), status: .forbidden)
            }
        }
        let actor = try TriageRequests.actor(context)
        do {
            let command = try WebTriageForm(body: body).command()
            return try await deps.blocking.run {
                let shown = try deps.queries.perform(command, on: fingerprint, actor: actor)
                // A fingerprint as stored: lowercase hex, safe in a path.
                return WebPage.redirect("/groups/" + shown)
            }
        } catch let error as APIError {
            return WebPage.html(Layout.message(title: "Not changed", error.message), status: error.status)
        }
    }

    pages.get("/reports/{id}") { request, context -> Response in
        let id = try webReportId(context)
        let serverURL = WebPage.serverURL(request, servesTLS: deps.servesTLS)
        return try await deps.blocking.run {
            guard let result = try deps.queries.result(reportId: id) else { return notProcessed(id, try deps.queries.jobStatus(reportId: id)) }
            let group = deps.queries.group(of: result)
            let report = try ReportPrinter.decode(result)
            let model = ReportPageModel(
                id: id, report: report, groupFingerprint: group?.fingerprint, groupTitle: group?.title,
                keyFrames: group?.frames ?? [], missing: result.missingImages,
                serverURL: serverURL, sources: try deps.queries.sourceAnswers(buildIds: ReportPrinter.notFoundIds(report)),
                origin: try deps.queries.reportOrigin(id: id))
            return WebPage.html(ReportPage.render(model))
        }
    }

    // Downloads for the browser (the API's `GET /api/v1/reports/{id}?format=apple|text` wants a
    // bearer header, which a link cannot send): the same renderers, behind the session.
    for (suffix, format) in [("apple.txt", ReportOutputFormat.apple), ("text.txt", .text)] {
        pages.get("/reports/{id}/\(suffix)") { _, context -> Response in
            let id = try webReportId(context)
            return try await deps.blocking.run {
                guard let result = try deps.queries.result(reportId: id) else { return notProcessed(id, try deps.queries.jobStatus(reportId: id)) }
                let report = try ReportPrinter.decode(result)
                let text = try ReportPrinter.render(
                    report, format: format, group: deps.queries.group(of: result),
                    sources: try deps.queries.sourceAnswers(buildIds: ReportPrinter.notFoundIds(report)))
                return WebPage.download(Data(text.utf8), name: "report-\(id)-\(format.rawValue).txt", type: "text/plain; charset=utf-8")
            }
        }
    }

    pages.get("/reports/{id}/raw") { _, context -> Response in
        let id = try webReportId(context)
        guard let stored = try await deps.blocking.run({ try deps.queries.report(id: id) }) else {
            return WebPage.html(Layout.message(title: "No such report", "There is no report \(id)."), status: .notFound)
        }
        // The exact bytes received, never rendered: served as an opaque download.
        return WebPage.download(stored.raw, name: "report-\(id).raw", type: "application/octet-stream")
    }

    pages.get("/symbols") { request, _ -> Response in
        let serverURL = WebPage.serverURL(request, servesTLS: deps.servesTLS)
        return try await deps.blocking.run {
            WebPage.html(SymbolsPage.render(try deps.queries.missingDebugFiles(), serverURL: serverURL))
        }
    }

    pages.get("/workers") { _, _ -> Response in
        // In memory, under a short lock: no blocking work.
        let rows = deps.remote?.snapshot() ?? []
        return WebPage.html(WorkersPage.render(WorkersJSON(rows), localSlots: deps.remote == nil ? nil : deps.census.connected))
    }
}

/// The `{id}` path parameter as a report id; anything else is a 404 page, not a JSON error.
private func webReportId(_ context: StacklineRequestContext) throws -> Int64 {
    let text = try context.parameters.require("id")
    guard let id = Int64(text), id > 0 else { throw WebError.notFound("There is no report \(text).") }
    return id
}

/// A report without a result: queued, running or failed (its newest job, `job`), in the CLI's
/// words; no such report when `job` is nil.
private func notProcessed(_ id: Int64, _ job: JobStatus?) -> Response {
    guard let job else {
        return WebPage.html(Layout.message(title: "No such report", "There is no report \(id)."), status: .notFound)
    }
    return WebPage.html(Layout.message(title: "Report \(id)", JobStateText.sentence(reportId: id, job)), status: .conflict)
}

/// An error a web page answers with an HTML page (404 for a malformed id, say).
struct WebError: Error {
    var status: HTTPResponse.Status
    var message: String
    static func notFound(_ message: String) -> WebError { WebError(status: .notFound, message: message) }
}

/// Pages need a `read` token: as `Authorization: Bearer` (scripts, tests), or the session
/// cookie `/login` set. Without either, a browser is sent to the sign-in form (303); a
/// request that presents a bearer token gets the API's 401/403, since it is a program.
struct WebAuthentication: RouterMiddleware {
    typealias Context = StacklineRequestContext
    let deps: ServerDependencies
    let sessions: WebSession

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if request.headers[.authorization] != nil {
            context.token = try await deps.authenticator.authenticate(request, scope: .read)
            return try await next(request, context)
        }
        let cookie = request.cookies[WebSession.cookieName]?.value
        // The token's row is read for every page (no cache: a revocation ends the session at once).
        if let token = try await sessions.token(of: cookie, now: deps.clock.now()) {
            context.token = token
            return try await next(request, context)
        }
        // Back to this page after signing in. The path travels in the query string, the token
        // never does.
        var target = request.uri.path
        if let query = request.uri.query, !query.isEmpty { target += "?" + query }
        guard let next = WebPage.localPath(target), next != "/" else { return WebPage.redirect("/login") }
        return WebPage.redirect("/login" + HTML.query([("next", next)]))
    }
}

/// Headers every web response carries, errors included: a Content-Security-Policy that allows
/// scripts, styles and images only from this server (no inline script or style anywhere, so an
/// escaped-but-missed value still could not run), no framing, no MIME sniffing, no caching of
/// pages that hold report data, no referrer leaving the site.
struct WebHeaders: RouterMiddleware {
    typealias Context = StacklineRequestContext
    let logger: Logger
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        + "form-action 'self'; frame-ancestors 'none'"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as WebError {
            response = WebPage.html(
                Layout.message(title: error.status == .notFound ? "Not found" : error.status.reasonPhrase, error.message), status: error.status)
        } catch let error as APIError {
            // A bad bearer token, say: the API's JSON answer, with the web headers added below.
            response = JSONResponse.error(error.status, error.message, headers: error.headers)
        } catch let error as HTTPResponseError {
            response = WebPage.html(Layout.message(title: "Error", error.status.reasonPhrase), status: error.status)
        } catch {
            // Caught here rather than by the request log's handler, so that this answer carries the
            // headers too; logged the same way (the log handler escapes report text).
            logger.error("request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            response = WebPage.html(
                Layout.message(title: "Internal error", "The page could not be built; the server log says why."), status: .internalServerError)
        }
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.cacheControl] = "no-store"
        if let referrer = HTTPField.Name("Referrer-Policy") { response.headers[referrer] = "same-origin" }
        if let frame = HTTPField.Name("X-Frame-Options") { response.headers[frame] = "DENY" }
        return response
    }
}

/// Response builders of the web view.
enum WebPage {
    static func html(_ document: String, status: HTTPResponse.Status = .ok) -> Response {
        JSONResponse.text(document, status: status, contentType: "text/html; charset=utf-8")
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .contentLength: "0"])
    }

    static func download(_ data: Data, name: String, type: String) -> Response {
        var response = JSONResponse.bytes(data, contentType: type)
        response.headers[.contentDisposition] = "attachment; filename=\"\(name)\""
        return response
    }

    /// The session cookie's `Set-Cookie` value (an empty value with max-age 0 signs out).
    static func cookie(_ value: String, maxAge: Int, request: Request, servesTLS: Bool) -> String {
        var cookie = "\(WebSession.cookieName)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict"
        if ClientURL.isHTTPS(request, servesTLS: servesTLS) { cookie += "; Secure" }
        return cookie
    }

    /// `path` if it is a path on this server (`/…`, not `//host` or `/\\host`, which browsers
    /// read as another site, and no control characters), else nil: where `next` may send a
    /// browser after signing in, so the form is no open redirect.
    static func localPath(_ path: String?) -> String? {
        guard let path, path.hasPrefix("/"), !path.hasPrefix("//"), !path.hasPrefix("/\\"), path.utf8.count <= 2048,
            path.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F && $0 != "\\" })
        else { return nil }
        return path
    }

    /// The two forms are POSTs another site could make a browser send (signing it in with the
    /// other site's token, or out). Browsers name the page's origin in `Origin` on every POST, so
    /// one that names a different host than the request's is refused; programs (curl) send none.
    static func requireSameOrigin(_ request: Request) throws {
        guard let name = HTTPField.Name("Origin"), let origin = request.headers[name] else { return }
        let host = origin.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first.map(String.init)
        guard let authority = request.head.authority, host?.lowercased() == authority.lowercased() else {
            throw WebError(status: .forbidden, message: "This form may only be sent from this server's own pages.")
        }
    }

    /// This server's URL as the browser reached it (for the upload command shown on pages).
    static func serverURL(_ request: Request, servesTLS: Bool) -> String {
        ClientURL.base(request, servesTLS: servesTLS) ?? "https://stackline.example"
    }
}

/// `application/x-www-form-urlencoded` bodies (the sign-in form has one field).
enum WebForm {
    static func field(_ name: String, in body: Data) -> String? {
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, decode(parts[0]) == name else { continue }
            return decode(parts[1])
        }
        return nil
    }

    private static func decode(_ s: Substring) -> String? {
        s.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}

/// A triage form's fields, as the group page sends them.
struct WebTriageForm: Sendable {
    var action: String
    var fields: [String: String]

    init(body: Data) {
        var fields: [String: String] = [:]
        for name in ["action", "note", "version", "users", "reports", "assignee", "text", "into"] {
            if let value = WebForm.field(name, in: body), !value.isEmpty { fields[name] = value }
        }
        action = fields["action"] ?? ""
        self.fields = fields
    }

    func number(_ name: String) throws -> Int? {
        guard let text = fields[name] else { return nil }
        guard let n = Int(text) else { throw APIError.badRequest("\(name) must be a whole number") }
        return n
    }

    /// The change the form asks for; 400 for a form that does not say enough.
    func command() throws -> TriageCommand {
        let note = fields["note"]
        switch action {
        case "resolve": return .state(.resolve(.now, version: nil), note: note)
        case "resolve-next": return .state(.resolve(.nextVersion, version: nil), note: note)
        case "resolve-in":
            guard let version = fields["version"] else { throw APIError.badRequest("give the version") }
            return .state(.resolve(.version, version: version), note: note)
        case "ignore": return .state(.ignore(until: nil, reports: try number("reports"), users: try number("users")), note: note)
        case "reopen": return .state(.reopen, note: note)
        case "assign": return .assign(fields["assignee"], note: note)
        case "comment":
            guard let text = fields["text"] else { throw APIError.badRequest("write a comment") }
            return .comment(text)
        case "merge":
            guard let into = fields["into"] else { throw APIError.badRequest("give the fingerprint to merge into") }
            return .merge(into: into, note: note)
        default: throw APIError.badRequest("unknown action")
        }
    }
}

/// What the web view's search and group pages count by, and how many of each.
enum WebSearch {
    static let facetKeys: [FacetKey] = ["os_version", "device_model", "version"].compactMap { try? FacetKey($0) }
    static let facetTop = 5
    static let pageSize = 50
}
