import Hummingbird

/// Every route group of the API, registered in one place. To add one, write
/// `Routes/NameRoutes.swift` with `func addNameRoutes(to router: Router<StacklineRequestContext>,
/// deps: ServerDependencies)` and add its line here (one per line, so branches merge cleanly).
func registerRoutes(on router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    addOperationsRoutes(to: router, deps: deps)
    addReportRoutes(to: router, deps: deps)
    addQueryRoutes(to: router, deps: deps)
    addReleaseRoutes(to: router, deps: deps)
    addTriageRoutes(to: router, deps: deps)
    addSearchRoutes(to: router, deps: deps)
    addSymbolicateRoutes(to: router, deps: deps)
    addIngestRoutes(to: router, deps: deps)
    addConfigRoutes(to: router, deps: deps)
    addSymbolRoutes(to: router, deps: deps)
    addDebuginfodRoutes(to: router, deps: deps)
    addWorkerRoutes(to: router, deps: deps)
    addWebRoutes(to: router, deps: deps)
}
