import Foundation
import TestSupport
import Testing

@testable import Server

extension ServerRouteTests {
    /// The web view's sign-in (docs/web.md) in process: which tokens sign in, what the session
    /// cookie says and where the form sends a browser, and that a revoked token ends the session.
    @Suite struct WebRouteTests {
        func form(_ fields: String) -> Data { Data(fields.utf8) }

        @Test func signInSetsASessionCookieThatEndsWithTheToken() async throws {
            let h = try RouteHarness()
            let read = try h.token(.read)
            let ingest = try h.token(.ingest)
            let readId = try #require(try h.db.tokens.verify(read)?.id)
            try await h.withRouter { client in
                // A wrong token is refused (401), one without the read scope too (403).
                #expect(try await client.send(.post, "/login", body: form("token=sl_1_nope")).status == 401)
                #expect(try await client.send(.post, "/login", body: form("token=\(ingest)")).status == 403)
                // A right one: 303 with the session cookie, HttpOnly and SameSite=Strict, not
                // Secure over plain HTTP (it would never come back), and without the token.
                let login = try await client.send(.post, "/login", body: form("token=\(read)"))
                #expect(login.status == 303, "\(login)")
                let cookie = try #require(login.headers[.setCookie])
                #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/"))
                #expect(!cookie.contains("Secure"))
                #expect(!cookie.contains(read) && !cookie.contains(String(read.suffix(64))))
                let proxied = try await client.send(.post, "/login", body: form("token=\(read)"), headers: ["X-Forwarded-Proto": "https"])
                #expect(proxied.headers[.setCookie]?.contains("; Secure") == true, "behind a TLS proxy the cookie is Secure")
                let session = String(cookie.split(separator: ";")[0])

                // Another site's page cannot sign the browser in (Origin names another host than
                // the request's, which RouteClient calls `localhost`).
                let crossSite = try await client.send(.post, "/login", body: form("token=\(read)"), headers: ["Origin": "http://evil.example"])
                #expect(crossSite.status == 403)
                #expect(crossSite.headers[.setCookie] == nil)
                #expect(try await client.send(.post, "/login", body: form("token=\(read)"), headers: ["Origin": "http://localhost"]).status == 303)
                // Back to the page asked for, but never to another site.
                let back = try await client.send(.post, "/login", body: form("token=\(read)&next=%2Freports%2F7"))
                #expect(back.headers[.location] == "/reports/7")
                for offsite in ["%2F%2Fevil.example%2F", "https%3A%2F%2Fevil.example%2F", "%2F%5Cevil.example"] {
                    let answer = try await client.send(.post, "/login", body: form("token=\(read)&next=\(offsite)"))
                    #expect(answer.headers[.location] == "/", "next=\(offsite)")
                }

                // The cookie opens the pages; without it a browser is sent to the form.
                #expect(try await client.send(.get, "/symbols", headers: ["Cookie": session]).status == 200)
                let anonymous = try await client.send(.get, "/symbols")
                #expect(anonymous.status == 303)
                #expect(anonymous.headers[.location] == "/login?next=%2Fsymbols")
                // Revoking the token ends the session at once (the row is read for every page).
                _ = try h.db.tokens.revoke(id: readId)
                #expect(try await client.send(.get, "/symbols", headers: ["Cookie": session]).status == 303)
            }
        }

        /// Two nodes on one database (issue 33 §2): a cookie one issues opens the other's pages,
        /// and a sign-out on either ends it on both; a node started later reads the same key.
        @Test func aSessionIsSharedByTheNodesOfOneDatabaseAndEndsOnAllOfThem() async throws {
            let a = try RouteHarness()
            let b = try RouteHarness(sharing: a)
            let read = try a.token(.read)
            let session = try await a.withRouterReturning { client in
                let login = try await client.send(.post, "/login", body: form("token=\(read)"))
                #expect(login.status == 303, "\(login)")
                return String(try #require(login.headers[.setCookie]).split(separator: ";")[0])
            }
            let other = try await a.withRouterReturning { client in
                String(try #require(try await client.send(.post, "/login", body: form("token=\(read)")).headers[.setCookie]).split(separator: ";")[0])
            }
            try await b.withRouter { client in
                #expect(try await client.send(.get, "/symbols", headers: ["Cookie": session]).status == 200)
                // Signed out on b: every session of the token issued so far ends, a's too.
                let out = try await client.send(.post, "/logout", headers: ["Cookie": session])
                #expect(out.status == 303, "\(out)")
                #expect(try await client.send(.get, "/symbols", headers: ["Cookie": session]).status == 303)
            }
            try await a.withRouter { client in
                #expect(try await client.send(.get, "/symbols", headers: ["Cookie": other]).status == 303)
                // A new sign-in afterwards works, on either node. Sign-outs end what was issued up
                // to their millisecond: the wait only makes sure the clock has moved past it.
                try await Task.sleep(for: .milliseconds(5))
                let again = try await client.send(.post, "/login", body: form("token=\(read)"))
                let fresh = String(try #require(again.headers[.setCookie]).split(separator: ";")[0])
                #expect(try await client.send(.get, "/symbols", headers: ["Cookie": fresh]).status == 200)
            }
            #expect(try a.db.tokens.sessionKey(proposing: WebSession.newKey()) == (try b.db.tokens.sessionKey(proposing: WebSession.newKey())))
        }

        /// A sign-in lasts 12 hours (docs/web.md), on the clock the routes are given: a test
        /// clock moved past the cookie's expiry, with nothing else changed, ends the session.
        @Test func aSessionEndsTwelveHoursAfterSigningIn() async throws {
            let now = Locked<Int64>(1_800_000_000_000)
            let h = try RouteHarness(clock: { now.value })
            let read = try h.token(.read)
            let twelveHours: Int64 = 12 * 3_600_000
            try await h.withRouter { client in
                let login = try await client.send(.post, "/login", body: form("token=\(read)"))
                let cookie = try #require(login.headers[.setCookie])
                #expect(cookie.contains("Max-Age=\(twelveHours / 1000)"), "\(cookie)")
                let session = String(cookie.split(separator: ";")[0])
                now.mutate { $0 += twelveHours - 1 }
                #expect(try await client.send(.get, "/symbols", headers: ["Cookie": session]).status == 200)
                now.mutate { $0 += 1 }
                let expired = try await client.send(.get, "/symbols", headers: ["Cookie": session])
                #expect(expired.status == 303 && expired.headers[.location] == "/login?next=%2Fsymbols", "\(expired)")
            }
        }
    }
}
