import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import APIModel
import ServiceClient
import SymbolStore

/// Why a request to a `stackline serve` failed; reads as the end of "stackline …: ".
typealias ServerClientError = ServiceClientError

/// The symbol endpoints of a `stackline serve`, as `symbols upload` calls them.
struct ServerClient: Sendable {
    private let client: ServiceClient
    var base: URL { client.base }

    init(base: String, token: String) throws {
        client = try ServiceClient(base: base, token: token)
    }

    /// Which of `offers` the server wants (POST /api/v1/symbols/missing).
    func missing(_ offers: [StoreOffer]) throws -> MissingSymbolsAnswer {
        try client.postJSON("api/v1/symbols/missing", offers, as: MissingSymbolsAnswer.self, timeout: 3600)
    }

    /// Sends one file, streamed from disk (POST /api/v1/symbols?name=BASENAME).
    func upload(_ path: String, progress: @escaping @Sendable (Int64, Int64) -> Void) throws -> AddReport {
        let name = (path as NSString).lastPathComponent
        let body = try client.expectSuccess(
            "POST", "api/v1/symbols", query: [URLQueryItem(name: "name", value: name)],
            body: .file(URL(fileURLWithPath: path), contentType: "application/octet-stream"), timeout: 3600, progress: progress)
        return try ServiceClient.decode(AddReport.self, body)
    }

    /// The job states of `reportIds`, and how many jobs run (POST /api/v1/symbols/reprocessing).
    func reprocessing(_ reportIds: [Int64]) throws -> ReprocessingAnswer {
        try client.postJSON("api/v1/symbols/reprocessing", reportIds, as: ReprocessingAnswer.self, timeout: 3600)
    }
}
