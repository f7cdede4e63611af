import Foundation
import Hummingbird
import JobQueue
import Queries

/// The read API (scope read): the JSON the CLI prints with `--json`, from the same code.
func addQueryRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    let read = router.group("/api/v1").add(middleware: RequireScope(.read, deps))

    read.get("/status") { _, _ in
        try JSONResponse.encode(queueCountsJSON(try deps.db.stateCounts()))
    }
}
