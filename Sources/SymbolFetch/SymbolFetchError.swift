import ReportModel

/// Why a debug file could not be fetched into, or kept in, a `FetchedDebugFiles`. Each case
/// reads as one line of a worker's log.
public enum SymbolFetchError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The cache directory cannot be created, read or marked.
    case cacheDirectory(path: String, reason: String)
    /// `--cache-size` must be positive.
    case invalidCapacity(Int64)
    /// No HTTP answer (connection refused, reset, timed out), or the download could not be
    /// written or was over the cache's capacity. Not remembered: the next job asks again.
    case transport(buildID: BuildID, request: String, reason: String)
    /// The server answered with a status that is neither 200 nor 404 (401: a wrong token).
    /// Not remembered either.
    case status(buildID: BuildID, request: String, status: Int)
    /// Neither `debuginfo` nor `executable` exists on the server for this build-id.
    case notOnServer(buildID: BuildID)
    /// The server sent bytes that are not a debug file of the requested build-id: another
    /// build's file (`served` names what it was), or no debug file at all (`reason` says why).
    /// Nothing of it is kept.
    case mismatch(buildID: BuildID, request: String, served: [BuildID], reason: String?)
    /// The downloaded file could not be stored in the cache (disk full, permissions).
    case store(buildID: BuildID, reason: String)

    public var description: String {
        switch self {
        case .cacheDirectory(let path, let reason):
            return "symbol cache \(path): \(reason)"
        case .invalidCapacity(let bytes):
            return "symbol cache capacity must be more than 0 bytes (got \(bytes))"
        case .transport(let id, let request, let reason):
            return "fetching \(id): GET /\(request) failed: \(reason)"
        case .status(let id, let request, let status):
            return "fetching \(id): the server answered \(status) to GET /\(request)"
        case .notOnServer(let id):
            return "fetching \(id): the server has no debuginfo or executable for it (404)"
        case .mismatch(let id, let request, let served, let reason):
            let what = served.isEmpty
                ? "not a debug file (\(reason ?? "refused by the store"))"
                : "the file of build-id \(served.map(\.hex).joined(separator: ", "))"
            return "fetching \(id): GET /\(request) returned \(what), not build-id \(id); refused and removed"
        case .store(let id, let reason):
            return "fetching \(id): cannot store the downloaded file: \(reason)"
        }
    }
}
