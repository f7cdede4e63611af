import APIModel
import DebugInfo
import Foundation
import Hummingbird
import Storage
import ReportModel
import SymbolStore

/// Debug files over the network (scope `symbols`): `POST /api/v1/symbols` stores a body as
/// `symbols add` stores a file, `POST /api/v1/symbols/missing` says which files the store
/// wants, and `POST /api/v1/symbols/reprocessing` reports the jobs they requeued (what
/// `symbols upload --wait` polls).
func addSymbolRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    let symbols = router.group("/api/v1/symbols").add(middleware: RequireScope(.symbols, deps))

    symbols.post("") { request, _ -> Response in
        let name = SymbolUpload.name(request.uri.queryParameters.get("name"))
        let incoming = try await deps.blocking.run { () throws -> IncomingFile in
            do { return try deps.store.receive(name: name) } catch {
                throw APIError(.internalServerError, "cannot receive the upload: \(error)")
            }
        }
        if let declared = request.headers[.contentLength] {
            guard let length = UInt64(declared) else { throw APIError.badRequest("Content-Length is not a number") }
            guard length <= incoming.limit else { throw APIError(.contentTooLarge, "\(name): larger than \(incoming.limitName)") }
        }
        // Each chunk goes to disk as it arrives: a dSYM zip is never held in memory.
        for try await chunk in request.body {
            try await deps.blocking.run {
                do { try chunk.withUnsafeReadableBytes { try incoming.append($0) } } catch let error as StoreError {
                    if case .tooLarge = error { throw APIError(.contentTooLarge, error.description) }
                    throw APIError(.internalServerError, "cannot receive the upload: \(error)")
                }
            }
        }
        guard incoming.written > 0 else { throw APIError.badRequest("empty body: send one debug file, a zip or a tar of them") }
        let report = try await deps.blocking.run { () throws -> AddReport in
            let file: RegularFile
            do { file = try incoming.file() } catch { throw APIError(.internalServerError, "cannot read the upload back: \(error)") }
            var skipped: [String] = []
            var report = AddReport()
            for (path, result) in deps.store.addReceived(file, skipped: &skipped) { report.record(path: path, result: result) }
            report.skipped = skipped
            report.summary.skipped = skipped.count
            deps.indexer.index(report.buildIds)
            // As `symbols add` does: reports that lacked these build-ids go back on the queue.
            do { report.requeuedReportIds = try deps.queries.requeueReports(missing: report.buildIds) } catch {
                deps.logger.error("stored debug files, but could not requeue reports", metadata: ["error": "\(error)"])
            }
            return report
        }
        return try JSONResponse.encode(report)
    }

    symbols.post("/missing") { request, _ -> Response in
        let items = try await SymbolUpload.list(
            of: SymbolOfferItem.self, request, deps: deps, what: "build ids or offers {buildId, hasDWARF, hasSymbolTable, executable}")
        let answer = try await deps.blocking.run { MissingSymbolsAnswer(items, wants: deps.store.wants) }
        return try JSONResponse.encode(answer)
    }

    symbols.post("/reprocessing") { request, _ -> Response in
        let ids = try await SymbolUpload.list(of: Int64.self, request, deps: deps, what: "report ids")
        let answer = try await deps.blocking.run {
            let states = try deps.queries.states(reportIds: ids)
            return ReprocessingAnswer(
                reports: ids.compactMap { id in states[id].map { ReprocessingAnswer.Report(id: id, state: $0.rawValue) } },
                running: try deps.queries.stateCounts()[.running] ?? 0)
        }
        return try JSONResponse.encode(answer)
    }
}

/// Limits and naming of symbol uploads.
enum SymbolUpload {
    /// Ids or report ids one request may ask about.
    static let maximumItems = 100_000

    /// The body as a JSON array of at most `maximumItems` (400 otherwise, naming `what` it should hold).
    static func list<T: Decodable & Sendable>(of type: T.Type, _ request: Request, deps: ServerDependencies, what: String) async throws -> [T] {
        let body = try await BodyReader.read(request, limit: deps.limits.maxBodyBytes)
        let items = try await deps.blocking.run { () throws -> [T] in
            do { return try JSONDecoder().decode([T].self, from: body) } catch {
                throw APIError.badRequest("expected a JSON array of \(what): \(error)")
            }
        }
        guard items.count <= maximumItems else { throw APIError.badRequest("\(items.count) items; at most \(maximumItems) per request") }
        return items
    }

    /// The upload's name from `?name=`: its last path component only, control characters
    /// dropped, at most 255 bytes; "upload" when none is given. It labels results and the
    /// sidecar's `source`, never a path on disk.
    static func name(_ given: String?) -> String {
        let last = (given ?? "").split(separator: "/").last.map(String.init) ?? ""
        var name = String(String.UnicodeScalarView(last.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7f }))
        while name.utf8.count > 255 { name.removeLast() }
        return name.isEmpty || name == "." || name == ".." ? "upload" : name
    }
}

/// One item of `POST /api/v1/symbols/missing`: a build id, or an offer describing the file.
struct SymbolOfferItem: Decodable, Sendable {
    /// As sent, for the answer's `invalid` list.
    var text: String
    var hasDWARF: Bool?
    var hasSymbolTable: Bool?
    var executable: Bool?

    private enum Keys: String, CodingKey { case buildId, hasDWARF, hasSymbolTable, executable }

    init(from decoder: Decoder) throws {
        if let single = try? decoder.singleValueContainer(), let text = try? single.decode(String.self) {
            self.text = text
            return
        }
        let c = try decoder.container(keyedBy: Keys.self)
        text = try c.decode(String.self, forKey: .buildId)
        hasDWARF = try c.decodeIfPresent(Bool.self, forKey: .hasDWARF)
        hasSymbolTable = try c.decodeIfPresent(Bool.self, forKey: .hasSymbolTable)
        executable = try c.decodeIfPresent(Bool.self, forKey: .executable)
    }
}

extension MissingSymbolsAnswer {
    init(_ items: [SymbolOfferItem], wants: (StoreOffer) -> Bool) {
        var missing: [BuildID] = []
        var seen: Set<BuildID> = []
        var invalid: [Invalid] = []
        for item in items {
            let id: BuildID
            do { id = try BuildID(item.text, lengths: .anyByteCount) } catch {
                invalid.append(Invalid(buildId: item.text, error: error.description))
                continue
            }
            guard !seen.contains(id) else { continue }
            let offer = StoreOffer(
                buildId: id, hasDWARF: item.hasDWARF ?? false, hasSymbolTable: item.hasSymbolTable ?? false,
                executable: item.executable ?? false)
            if wants(offer) {
                seen.insert(id)
                missing.append(id)
            }
        }
        self.init(missing: missing, invalid: invalid)
    }
}
