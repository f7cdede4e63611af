import Foundation
import JSONFormat
import Hummingbird
import Storage
import Master
import APIModel
import Presentation
import ReportModel
import WorkerProtocol

/// Remote workers (`stackline-worker --connect`, scope `worker`): connect, claim (long-poll),
/// heartbeat and result, each a self-contained request carrying the lease's fencing token
/// (docs/workers.md); and the list of connected workers (scope `read`).
func addWorkerRoutes(to router: Router<StacklineRequestContext>, deps: ServerDependencies) {
    router.group("/api/v1/workers").add(middleware: RequireScope(.read, deps)).get("") { _, _ -> Response in
        // In memory, under a short lock: no blocking work.
        let rows = deps.remote?.snapshot() ?? []
        return try JSONResponse.encode(WorkersJSON(rows))
    }

    let workers = router.group("/api/v1/workers").add(middleware: RequireScope(.worker, deps))

    workers.post("/connect") { request, context -> Response in
        let pool = try remotePool(deps)
        let hello = try await decode(WorkerHello.self, request, limit: WorkerRouteLimits.connectBytes, deps)
        let welcome: WorkerWelcome
        let token = try context.requireToken().id
        let address = context.remoteAddress
        // Off the request threads: connecting records the worker id's owner in the database.
        do { welcome = try await deps.blocking.run { try pool.connect(hello, address: address, token: token) } } catch let error as RemoteWorkerPool.Refusal {
            switch error {
            case .notOwner: throw APIError.forbidden(error.description)
            case .unavailable: throw APIError(.serviceUnavailable, error.description)
            default: throw APIError.badRequest(error.description)
            }
        }
        return try WorkerWire.encode(welcome)
    }

    workers.post("/:id/claim") { request, context -> Response in
        let pool = try remotePool(deps)
        let id = try await ownedWorkerId(context, pool, deps)
        // The envelope, then one reply frame per result it announces (RemoteMessages.swift).
        let body = try await BodyReader.read(request, limit: WorkerRouteLimits.resultBytes)
        // Up to a frame's worth of results: split and decoded on the pool.
        let (frames, claim) = try await deps.blocking.run { () throws -> ([Data], ClaimRequest) in
            let frames: [Data]
            do { frames = try Framing.unbundle(body) } catch {
                throw APIError.badRequest("the body is not a bundle of frames (\(RemoteProtocol.framesContentType)): \(error)")
            }
            guard let envelope = frames.first else { throw APIError.badRequest("the body holds no ClaimRequest frame") }
            do { return (frames, try JSONDecoder().decode(ClaimRequest.self, from: envelope)) } catch {
                throw APIError.badRequest("the first frame is not a ClaimRequest: \(error)")
            }
        }
        guard frames.count == claim.results.count + 1 else {
            throw APIError.badRequest("the claim announces \(claim.results.count) results but carries \(frames.count - 1) reply frames")
        }
        let wait = min(max(claim.waitSeconds, 0), RemoteProtocol.maxClaimWaitSeconds)
        // Results first: they are the previous jobs of the slot that now asks for its next.
        let results = Array(zip(claim.results, frames.dropFirst()))
        // Recorded together: the results share the master's next completion transaction.
        let delivered: [ClaimAnswer.Delivered] = try await deps.blocking.run {
            let recorded = try pool.complete(workerId: id, results: results.map { (header: $0.0, replyFrame: $0.1) })
            return zip(results, recorded).map { (result, recorded) -> ClaimAnswer.Delivered in
                let jobId = result.0.lease.jobId
                switch recorded {
                case .success(let outcome):
                    return ClaimAnswer.Delivered(
                        jobId: jobId, outcome: outcome,
                        message: outcome == nil ? "the lease is no longer yours: it expired and was taken over; the result was not stored" : nil)
                case .failure(let refusal):
                    return ClaimAnswer.Delivered(jobId: jobId, outcome: nil, message: refusal.description)
                }
            }
        }
        let deadline = ContinuousClock.now + .milliseconds(Int.clamping(wait * 1000))
        var pause = Duration.milliseconds(5)
        while true {
            let jobs: [(JobLease, Data)]
            do {
                jobs = try await deps.blocking.run { try pool.claim(workerId: id, claim) }
            } catch let refusal as RemoteWorkerPool.Refusal {
                if case .invalid(let why) = refusal { throw APIError.badRequest(why) }
                // A master that restarted forgot its workers: the worker connects again. When
                // results came along, they were recorded: say what became of them, so the
                // worker does not send them again.
                guard delivered.isEmpty else {
                    let answer = try JSONStyle.compact.encode(ClaimAnswer(jobs: [], delivered: delivered, reconnect: true))
                    return JSONResponse.bytes(try Framing.bundle([answer]), contentType: RemoteProtocol.framesContentType)
                }
                throw APIError(.notFound, refusal.description)
            }
            if !jobs.isEmpty || (!delivered.isEmpty && (ContinuousClock.now >= deadline || claim.maxJobs <= 0)) {
                let answer = try JSONStyle.compact.encode(ClaimAnswer(jobs: jobs.map(\.0), delivered: delivered))
                return JSONResponse.bytes(try Framing.bundle([answer] + jobs.map(\.1)), contentType: RemoteProtocol.framesContentType)
            }
            if ContinuousClock.now >= deadline || claim.maxJobs <= 0 || Task.isCancelled {
                return Response(status: .noContent)
            }
            // Backs off to 100 ms between looks: an idle slot costs one read of the queue every
            // tenth of a second (`hasRunnableJob`), and a report that arrives waits at most that long.
            try await Task.sleep(for: min(pause, deadline - ContinuousClock.now))
            pause = min(pause * 2, .milliseconds(100))
        }
    }

    workers.post("/:id/heartbeat") { request, context -> Response in
        let pool = try remotePool(deps)
        let id = try await ownedWorkerId(context, pool, deps)
        let beat = try await decode(HeartbeatRequest.self, request, limit: WorkerRouteLimits.messageBytes, deps)
        let answer = try await deps.blocking.run { try pool.heartbeat(workerId: id, beat) }
        return try WorkerWire.encode(answer)
    }

    workers.post("/:id/result") { request, context -> Response in
        let pool = try remotePool(deps)
        let id = try await ownedWorkerId(context, pool, deps)
        // The report travels compressed, but its JSON may be as large as a frame; the body is base64 of it.
        let result = try await decode(RemoteResult.self, request, limit: WorkerRouteLimits.resultBytes, deps)
        let outcome: ResultAnswer.Outcome?
        do {
            outcome = try await deps.blocking.run { try pool.complete(workerId: id, result) }
        } catch let refusal as RemoteWorkerPool.Refusal {
            throw APIError.badRequest(refusal.description)
        }
        guard let outcome else {
            throw APIError(.conflict, "the lease of job \(result.lease.jobId) is no longer yours: it expired and was taken over; the result was not stored")
        }
        return try WorkerWire.encode(ResultAnswer(outcome: outcome))
    }
}

/// The `:id` of a worker route, refused (403) when another token connected that worker id.
private func ownedWorkerId(_ context: StacklineRequestContext, _ pool: RemoteWorkerPool, _ deps: ServerDependencies) async throws -> String {
    let id = try context.parameters.require("id")
    let token = try context.requireToken().id
    do {
        // Off the event loop: after a restart the owner is read from the database.
        try await deps.blocking.run { try pool.requireOwner(workerId: id, token: token) }
    } catch let refusal as RemoteWorkerPool.Refusal {
        if case .unavailable = refusal { throw APIError(.serviceUnavailable, refusal.description) }
        throw APIError.forbidden(refusal.description)
    }
    return id
}

private func remotePool(_ deps: ServerDependencies) throws -> RemoteWorkerPool {
    guard let pool = deps.remote else { throw APIError(.serviceUnavailable, "this server runs no master for remote workers") }
    return pool
}

/// The body as a `T` message, decoded on the pool (a hello or a result runs to megabytes).
private func decode<T: Decodable & Sendable>(_ type: T.Type, _ request: Request, limit: Int, _ deps: ServerDependencies) async throws -> T {
    let body = try await BodyReader.read(request, limit: limit)
    return try await deps.blocking.run {
        do { return try JSONDecoder().decode(type, from: body) } catch {
            throw APIError.badRequest("the body is not a \(T.self) message: \(error)")
        }
    }
}

/// Body limits of the worker routes.
enum WorkerRouteLimits {
    /// A hello lists every build id a build machine holds (~70 bytes each as JSON).
    static let connectBytes = 64 << 20
    static let messageBytes = 16 << 20
    /// A result's report is limited by the frame limit as JSON; base64 adds a third.
    static var resultBytes: Int { Framing.maxFrame / 3 * 4 + (1 << 20) }
}

/// The worker protocol's JSON: one line in the compact style, as a remote worker writes its
/// own messages (RemoteConnection), so both directions carry the same form.
enum WorkerWire {
    static func encode<T: Encodable>(_ value: T) throws -> Response {
        JSONResponse.bytes(try JSONStyle.compact.encode(value), contentType: JSONResponse.jsonType)
    }
}
