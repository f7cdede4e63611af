import Foundation
import Hummingbird
import Storage

/// `/healthz`, `/readyz` (no token), `/metrics` (read scope) and the API document.
func addOperationsRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    router.get("/healthz") { _, _ in
        try JSONResponse.encode(["status": "ok"])
    }

    router.get("/readyz") { _, _ -> Response in
        let checks = try await Readiness.check(deps)
        let ready = checks.allSatisfy { $0.value == "ok" }
        return try JSONResponse.encode(
            ReadinessJSON(ready: ready, checks: checks), status: ready ? .ok : .serviceUnavailable)
    }

    let read = router.group("").add(middleware: RequireScope(.read, deps))
    read.get("/metrics") { _, _ in
        let text = try await deps.blocking.run { deps.metrics.render(queueCounts: try? deps.queries.stateCounts()) }
        return JSONResponse.text(text, contentType: "text/plain; version=0.0.4; charset=utf-8")
    }
    read.get("/api/v1/openapi.yaml") { _, _ in
        JSONResponse.text(OpenAPIDocument.yaml, contentType: "application/yaml")
    }
}

struct ReadinessJSON: Encodable {
    var ready: Bool
    var checks: [String: String]
}

/// What `/readyz` checks: the database takes a write, the store is readable, a worker (local,
/// or remote and heard from recently) runs.
enum Readiness {
    static func check(_ deps: ServerDependencies) async throws -> [String: String] {
        var checks = try await deps.blocking.run {
            var checks: [String: String] = [:]
            do {
                try deps.queries.checkWritable()
                checks["database"] = "ok"
            } catch {
                checks["database"] = "not writable: \(error)"
            }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: deps.store.root, isDirectory: &isDirectory), isDirectory.boolValue,
                FileManager.default.isReadableFile(atPath: deps.store.root)
            {
                checks["store"] = "ok"
            } else {
                checks["store"] = "not readable: \(deps.store.root)"
            }
            return checks
        }
        let workers = deps.census.connected + (deps.remote?.connectedCount ?? 0)
        checks["workers"] = workers > 0 ? "ok" : "no worker connected"
        return checks
    }
}
