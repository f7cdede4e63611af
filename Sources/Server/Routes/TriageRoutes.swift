import Foundation
import Hummingbird
import APIModel
import Presentation
import Storage

/// What a team does to groups (docs/triage.md): state changes, assignment, comments, merges
/// (scope `triage` or `admin`), and a group's history (scope `read`). The CLI's
/// `stackline group FP resolve|ignore|reopen|assign|comment|merge|unmerge` make the same changes.
func addTriageRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    let read = router.group("/api/v1").add(middleware: RequireScope(.read, deps))
    let triage = router.group("/api/v1").add(middleware: RequireScope(.triage, deps))

    // `stackline group FP --json` carries the newest entries too; this pages back further.
    read.get("/groups/{fingerprint}/history") { request, context in
        let limit = try QueryParameters(request).int("limit", in: 1...1_000) ?? 100
        let fingerprint = try context.parameters.require("fingerprint")
        return try await deps.blocking.run {
            let group = try TriageRequests.existingGroup(fingerprint, deps.queries.groupFingerprint)
            return try JSONResponse.encode(try deps.queries.groupHistory(fingerprint: group, limit: limit).map(GroupHistoryJSON.init))
        }
    }

    triage.post("/groups/{fingerprint}/state") { request, context in
        let (group, body, actor) = try await TriageRequests.prepare(GroupStateRequest.self, request, context, deps)
        let change = try TriageRequests.change(body, now: deps.clock.now())
        return try await deps.blocking.run {
            let triage = try TriageRequests.answer { try deps.queries.changeGroupState(fingerprint: group, change, actor: actor, note: body.note) }
            return try JSONResponse.encode(GroupTriageJSON(triage))
        }
    }

    triage.post("/groups/{fingerprint}/assign") { request, context in
        let (group, body, actor) = try await TriageRequests.prepare(GroupAssignRequest.self, request, context, deps)
        return try await deps.blocking.run {
            let triage = try TriageRequests.answer { try deps.queries.assignGroup(fingerprint: group, to: body.assignee, actor: actor, note: body.note) }
            return try JSONResponse.encode(GroupTriageJSON(triage))
        }
    }

    triage.post("/groups/{fingerprint}/comments") { request, context in
        let (group, body, actor) = try await TriageRequests.prepare(GroupCommentRequest.self, request, context, deps)
        return try await deps.blocking.run {
            let entry = try TriageRequests.answer { try deps.queries.commentOnGroup(fingerprint: group, text: body.text, actor: actor) }
            return try JSONResponse.encode(GroupHistoryJSON(entry), status: .created)
        }
    }

    triage.post("/groups/{fingerprint}/merge") { request, context in
        let (group, body, actor) = try await TriageRequests.prepare(GroupMergeRequest.self, request, context, deps)
        return try await deps.blocking.run {
            let into = try TriageRequests.existingGroup(body.into, deps.queries.groupFingerprint)
            try TriageRequests.answer { try deps.queries.mergeGroup(group, into: into, actor: actor, note: body.note) }
            return try JSONResponse.encode(GroupMergeAnswer(merged: group, into: into))
        }
    }

    // The merged group no longer exists as a group: its whole fingerprint names it.
    triage.post("/groups/{fingerprint}/unmerge") { _, context in
        let fingerprint = try context.parameters.require("fingerprint")
        let actor = try TriageRequests.actor(context)
        return try await deps.blocking.run {
            guard let from = try deps.queries.mergeTarget(of: fingerprint) else {
                throw APIError.notFound("group \(fingerprint) is not merged into another (give its whole fingerprint)")
            }
            try TriageRequests.answer { try deps.queries.unmergeGroup(fingerprint, actor: actor, note: nil) }
            return try JSONResponse.encode(GroupMergeAnswer(merged: fingerprint, into: from))
        }
    }
}

/// Reading and answering triage requests.
enum TriageRequests {
    /// Bodies are small JSON objects: a comment is the largest thing in one.
    static let maxBodyBytes = 64 * 1024

    /// The group the path names (a unique prefix works), the decoded body, and who asks.
    static func prepare<T: Decodable & Sendable>(
        _ type: T.Type, _ request: Request, _ context: StacklineRequestContext, _ deps: ServerDependencies
    ) async throws -> (String, T, String) {
        let fingerprint = try context.parameters.require("fingerprint")
        let actor = try actor(context)
        let body = try await BodyReader.read(request, limit: min(maxBodyBytes, deps.limits.maxBodyBytes))
        return try await deps.blocking.run {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let decoded: T
            do { decoded = try decoder.decode(T.self, from: body) } catch {
                throw APIError.badRequest("expected a JSON object (docs/openapi.yaml): \(error)")
            }
            return (try existingGroup(fingerprint, deps.queries.groupFingerprint), decoded, actor)
        }
    }

    /// Who a change is recorded as: the token's name, else its id.
    static func actor(_ context: StacklineRequestContext) throws -> String {
        let token = try context.requireToken()
        if let name = token.name, !name.isEmpty { return name }
        return "token \(token.id)"
    }

    /// The whole fingerprint of the group `prefix` names; 404 when none, 400 when several.
    /// `find` is the query, made by the caller inside its blocking closure.
    static func existingGroup(_ prefix: String, _ find: (String) throws -> String?) throws -> String {
        do {
            guard let found = try find(prefix) else {
                throw APIError.notFound("no group with fingerprint \(prefix)")
            }
            return found
        } catch let error as GroupQueryError {
            throw APIError.badRequest(error.description)
        }
    }

    /// Runs a triage write; a refusal is a 400 (404 for a group that went away meanwhile).
    @discardableResult
    static func answer<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as TriageError {
            if case .noGroup = error { throw APIError.notFound(error.description) }
            throw APIError.badRequest(error.description)
        }
    }

    /// The change a state request asks for; 400 for fields that do not go with its state.
    static func change(_ body: GroupStateRequest, now: Int64) throws -> GroupStateChange {
        let ignoreFields = body.until != nil || body.untilReports != nil || body.untilUsers != nil
        let resolveFields = body.inNextVersion != nil || body.inVersion != nil
        switch body.state {
        case "resolved":
            guard !ignoreFields else { throw APIError.badRequest("until, untilReports and untilUsers go with state ignored") }
            if body.inNextVersion == true {
                guard body.inVersion == nil else { throw APIError.badRequest("give inNextVersion or inVersion, not both") }
                return .resolve(.nextVersion, version: nil)
            }
            if let version = body.inVersion { return .resolve(.version, version: version) }
            return .resolve(.now, version: nil)
        case "ignored":
            guard !resolveFields else { throw APIError.badRequest("inNextVersion and inVersion go with state resolved") }
            return .ignore(until: body.until?.milliseconds, reports: body.untilReports, users: body.untilUsers)
        case "open":
            guard !ignoreFields && !resolveFields else { throw APIError.badRequest("state open takes no conditions") }
            return .reopen
        default:
            throw APIError.badRequest("state must be open, resolved or ignored, not \(body.state)")
        }
    }
}
