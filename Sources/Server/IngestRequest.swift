import Foundation
import Hummingbird
import Storage

extension ServerDependencies {
    /// A request to an ingest endpoint (`/reports`, `/ingest`): the token's rate limit applied,
    /// the body read under the limits and inflated when gzip, then `work` on the token and the
    /// body on the blocking pool (`BodyReader.readReport`); each refusal counted in `/metrics`.
    func ingestRequest<T: Sendable>(
        _ request: Request, context: StacklineRequestContext,
        then work: @escaping @Sendable (TokenRecord, BodyReader.ReportBody) throws -> T
    ) async throws -> (TokenRecord, T) {
        let token = try context.requireToken()
        do { try checkIngestRate(token) } catch {
            ServerMetrics.reportRefused(reason: "rate_limited")
            throw error
        }
        do {
            let answer = try await BodyReader.readReport(
                request, limit: limits.maxBodyBytes, inflatedLimit: limits.maxReportBytes, blocking: blocking) { try work(token, $0) }
            return (token, answer)
        } catch let error as APIError {
            ServerMetrics.reportRefused(reason: error.status == .contentTooLarge ? "too_large" : "bad_body")
            throw error
        }
    }
}
