import Foundation
import HTTPTypes
import Hummingbird
import Storage
import ReportModel
import SDKProtocol

/// `GET /api/v1/config?namespace=NS` (scope ingest, the token SDKs hold): the namespace's remote
/// configuration, as `{NS: configuration}` (the design's `configurationDictionary`).
func addConfigRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    let ingest = router.group("/api/v1").add(middleware: RequireScope(.ingest, deps))
    ingest.get("/config") { request, context -> Response in
        let token = try context.requireToken()
        guard let requested = request.uri.queryParameters.get("namespace") else {
            throw APIError.badRequest("query parameter namespace is required: /api/v1/config?namespace=NS")
        }
        let namespace: NamespaceName
        do throws(NamespaceNameError) {
            namespace = try NamespaceName(requested)
        } catch {
            throw APIError.badRequest(error.description)
        }
        if let restricted = token.namespace, restricted != namespace.value {
            throw APIError.forbidden("this token may only read namespace '\(restricted)'")
        }
        // The row's read and its JSON's parse in one pool job.
        let configuration = try await deps.blocking.run { () throws -> SDKConfiguration in
            guard let stored = try deps.queries.namespace(namespace.value) else {
                throw APIError.notFound("no namespace '\(namespace)' (`stackline namespaces configure` creates it)")
            }
            do {
                return try SDKConfiguration(storedJSON: stored.configuration)
            } catch {
                // Only `namespaces configure` writes it, after the same validation.
                throw APIError(.internalServerError, "the stored configuration of '\(namespace)' does not validate: \(error)")
            }
        }
        let document = configuration.served(namespace: namespace, defaultURL: defaultIngestURL(request, servesTLS: deps.servesTLS))
        return JSONResponse.bytes(document, contentType: JSONResponse.jsonType)
    }
}

/// This server's ingest URL as the client reached it, for configurations that name no `url`.
private func defaultIngestURL(_ request: Request, servesTLS: Bool) -> String {
    let path = "/api/v1/ingest"
    return ClientURL.base(request, servesTLS: servesTLS).map { $0 + path } ?? path
}
