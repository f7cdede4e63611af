import Foundation
import Storage
import TestSupport
import Testing

@testable import Server

/// Every suite of in-process route tests, one at a time: the refusal counters `/metrics` shows
/// are per process, and a test reads their change.
@Suite(.serialized) enum ServerRouteTests {}

/// The routes of `stackline serve` in process (`StacklineServer.makeRouter` served on a loopback
/// port to `RouteClient`): authentication and scopes, request limits, gzip bodies,
/// the 202 body and the error shape.
extension ServerRouteTests {
    @Suite struct RouteTests {
        @Test func ingestsPlainAndGzipReportsIntoTheDatabase() async throws {
            let h = try RouteHarness()
            let token = try h.token(.ingest)
            let plain = try appleCrash(1)
            let other = try appleCrash(2)
            let gzipOther = try gzipped(other)
            let gzipPlain = try gzipped(plain)
            try await h.withRouter { client in
                let a = try await client.send(.post, "/api/v1/reports", token: token, body: plain)
                #expect(a.status == 202, "\(a)")
                #expect(a.json?["duplicate"] as? Bool == false)
                let b = try await client.send(.post, "/api/v1/reports", token: token, body: gzipOther, headers: ["Content-Encoding": "gzip"])
                #expect(b.status == 202, "\(b)")
                let again = try await client.send(.post, "/api/v1/reports", token: token, body: gzipPlain, headers: ["Content-Encoding": "gzip"])
                #expect(again.status == 202)
                #expect(again.json?["duplicate"] as? Bool == true)
                #expect(again.json?["id"] as? Int == a.json?["id"] as? Int)
                // The answer is written by hand; its bytes are Foundation's JSONEncoder's, in the style
                // of every JSON answer (docs/json.md: pretty-printed, sorted keys).
                struct Accepted: Encodable { var id: Int; var duplicate: Bool }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                for answer in [a, b, again] {
                    let expected = try encoder.encode(
                        Accepted(id: try #require(answer.json?["id"] as? Int), duplicate: try #require(answer.json?["duplicate"] as? Bool)))
                    #expect(answer.text == String(decoding: expected, as: UTF8.self))
                }
                // The rows, by plain SQL: each id holds the digest of the bytes we sent, once.
                for (answer, bytes) in [(a, plain), (b, other)] {
                    let id = try #require(answer.json?["id"] as? Int)
                    #expect(try sqlite(h.dbPath, "SELECT digest FROM reports WHERE id = \(id)").first?["digest"] as? String == (try sha256sum(bytes)))
                }
                #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM reports") == 2)
                #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state = 'queued'") == 2)
                // The sender's gzip is the stored form: the server does not compress it again.
                let bId = try #require(b.json?["id"] as? Int)
                let storedHex = try sqlite(h.dbPath, "SELECT hex(raw) AS raw FROM reports WHERE id = \(bId)").first?["raw"] as? String
                #expect(storedHex == gzipOther.map { String(format: "%02X", $0) }.joined())
            }
        }

        @Test func tokensAreCheckedAndStoredOnlyAsDigests() async throws {
            let h = try RouteHarness()
            let ingest = try h.token(.ingest)
            let read = try h.token(.read)
            let admin = try h.token(.admin)
            let readId = try #require(try h.db.tokens.verify(read)?.id)
            let body = try appleCrash(3)
            try await h.withRouter { client in
                #expect(try await client.send(.get, "/healthz").status == 200)
                let missing = try await client.send(.post, "/api/v1/reports", body: body)
                #expect(missing.status == 401)
                #expect(missing.error != nil, "\(missing)")
                // RFC 6750: a 401 names the scheme it wants.
                #expect(missing.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
                #expect(try await client.send(.post, "/api/v1/reports", token: "sl_1_" + String(repeating: "0", count: 64), body: body).status == 401)
                #expect(try await client.send(.post, "/api/v1/reports", token: "nonsense", body: body).status == 401)
                let wrongScope = try await client.send(.post, "/api/v1/reports", token: read, body: body)
                #expect(wrongScope.status == 403)
                #expect(wrongScope.error?.contains("ingest") == true, "\(wrongScope)")
                // A refusal never repeats the token it was given.
                #expect(!wrongScope.text.contains(read))
                #expect(try await client.send(.get, "/api/v1/status", token: ingest).status == 403)
                #expect(try await client.send(.get, "/api/v1/status", token: read).status == 200)
                #expect(try await client.send(.get, "/api/v1/status", token: admin).status == 200)
                #expect(try await client.send(.post, "/api/v1/reports", token: admin, body: body).status == 202)

                // Revoked: refused once the server's token row is older than its 1 s lifetime (the
                // secret is checked on every request; only the row is reused).
                _ = try h.db.tokens.revoke(id: readId)
                try await Task.sleep(for: .milliseconds(1200))
                #expect(try await client.send(.get, "/api/v1/status", token: read).status == 401)
            }
            // Only digests in the database: never the token text, and the digest is SHA-256 of it.
            let rows = try sqlite(h.dbPath, "SELECT id, token_hash FROM tokens ORDER BY id")
            let dump = try runProcess("sqlite3", [h.dbPath, ".dump"]).stdout
            for token in [ingest, read, admin] {
                #expect(!dump.contains(token.suffix(64)))
                #expect(rows.contains { $0["token_hash"] as? String == (try? sha256sum(Data(token.utf8))) })
            }
            #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM tokens WHERE revoked_at IS NOT NULL") == 1)
            #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM tokens WHERE last_used_at IS NOT NULL") >= 2)
        }

        @Test func refusesOversizedBombsMalformedAndTooFrequentUploads() async throws {
            let h = try RouteHarness()
            let token = try h.token(.ingest)
            let read = try h.token(.read)
            // One request per 1,000 s after the burst of 4: no token comes back before the fifth.
            let limits = ServerLimits(maxBodyBytes: 200_000, maxReportBytes: 1_000_000, ingestRate: 0.001, ingestBurst: 4)
            // A gzip bomb: 50 MB of zeros in ~50 KB.
            let bomb = try gzipped(Data(count: 50_000_000))
            #expect(bomb.count < 200_000)
            let report = try appleCrash(4)
            try await h.withRouter(limits) { client in
                let before = try await client.send(.get, "/metrics", token: read).text
                // 413 from Content-Length (RouteClient always sends one with a body).
                let declared = try await client.send(.post, "/api/v1/reports", token: token, body: Data(repeating: UInt8(ascii: "a"), count: 300_000))
                #expect(declared.status == 413, "\(declared)")
                #expect(declared.error?.contains("200000") == true, "\(declared)")
                let bombAnswer = try await client.send(.post, "/api/v1/reports", token: token, body: bomb, headers: ["Content-Encoding": "gzip"])
                #expect(bombAnswer.status == 413, "\(bombAnswer)")
                #expect(bombAnswer.error?.contains("1000000") == true, "\(bombAnswer)")
                // Malformed: 400 with the parser's message.
                let malformed = try await client.send(.post, "/api/v1/reports", token: token, body: Data("hello, not a report\n".utf8))
                #expect(malformed.status == 400)
                #expect(malformed.error?.contains("format not detected") == true, "\(malformed)")
                // Said to be gzip and is not: 400 naming gzip.
                let notGzip = try await client.send(.post, "/api/v1/reports", token: token, body: report, headers: ["Content-Encoding": "gzip"])
                #expect(notGzip.status == 400, "\(notGzip)")
                #expect(notGzip.error?.hasPrefix("gzip") == true, "\(notGzip)")
                #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM reports") == 0)

                // The burst of 4 is spent by now; the next gets 429 with Retry-After.
                let limited = try await client.send(.post, "/api/v1/reports", token: token, body: report)
                #expect(limited.status == 429, "\(limited)")
                let retryAfter = try #require(limited.headers[.retryAfter].flatMap { Int($0) })
                #expect(retryAfter >= 1)
                #expect(limited.error != nil)
                #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM reports") == 0)
                // Not the rate limiter's business: an encoding nobody supports, refused before the body is read.
                let brotli = try await client.send(.post, "/api/v1/reports", token: try h.token(.admin), body: report, headers: ["Content-Encoding": "br"])
                #expect(brotli.status == 415, "\(brotli)")

                let after = try await client.send(.get, "/metrics", token: read).text
                func counted(_ reason: String) -> Int {
                    let sample = #"stackline_reports_refused_total{reason=""# + reason + #""}"#
                    return metricValue(after, sample) - metricValue(before, sample)
                }
                #expect(counted("rate_limited") == 1, "\(after)")
                #expect(counted("too_large") == 2)
                #expect(counted("malformed") == 1)
                // The unsupported encoding is a bad body too (415).
                #expect(counted("bad_body") == 2)
            }
        }

        @Test func queryRefusalsHaveTheErrorShape() async throws {
            let h = try RouteHarness()
            let read = try h.token(.read)
            try await h.withRouter { client in
                for (path, status) in [
                    ("/api/v1/reports/1?format=yaml", 400), ("/api/v1/reports/999999", 404), ("/api/v1/groups?kind=bogus", 400),
                    ("/api/v1/groups/ffff0000", 404), ("/api/v1/status/0", 400), ("/api/v1/groups?limit=0", 400),
                ] {
                    let answer = try await client.send(.get, path, token: read)
                    #expect(answer.status == status, "\(path): \(answer)")
                    #expect(answer.error?.isEmpty == false, "\(path): \(answer)")
                    #expect(answer.headers[.contentType] == "application/json", "\(path)")
                }
            }
        }
    }
}
