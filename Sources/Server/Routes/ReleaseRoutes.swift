import Foundation
import Hummingbird
import APIModel
import Presentation
import ReportModel

/// `GET /api/v1/releases` (scope read): release health per app version, what
/// `stackline releases --json` prints.
func addReleaseRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    let read = router.group("/api/v1").add(middleware: RequireScope(.read, deps))

    // `stackline releases --json [--app] [--namespace]`.
    read.get("/releases") { request, _ in
        let q = QueryParameters(request)
        // The same bound as the values they are compared with.
        let limit = ReportLimits.maxIdentityBytes
        let bounded = "at most \(limit) bytes"
        let app = try q.value("app", expected: bounded) { $0.utf8.count <= limit ? $0 : nil }
        let namespace = try q.value("namespace", expected: bounded) { $0.utf8.count <= limit ? $0 : nil }
        return try await deps.blocking.run {
            try JSONResponse.encode(try deps.queries.releaseHealth(app: app, namespace: namespace).map(ReleaseHealthJSON.init))
        }
    }
}
