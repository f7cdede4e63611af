import Foundation
import Hummingbird
import JobQueue

extension ServerDependencies {
    /// The token and body of a request to an ingest endpoint (`/reports`, `/ingest`): the
    /// token's rate limit applied, the body read under the limits and inflated when gzip, each
    /// refusal counted in `/metrics`.
    func ingestRequest(_ request: Request, context: StacklineRequestContext) async throws -> (TokenRecord, BodyReader.ReportBody) {
        let token = try context.requireToken()
        do { try checkIngestRate(token) } catch {
            ServerMetrics.reportRefused(reason: "rate_limited")
            throw error
        }
        do {
            return (token, try await BodyReader.readReport(request, limit: limits.maxBodyBytes, inflatedLimit: limits.maxReportBytes, blocking: blocking))
        } catch let error as APIError {
            ServerMetrics.reportRefused(reason: error.status == .contentTooLarge ? "too_large" : "bad_body")
            throw error
        }
    }
}
