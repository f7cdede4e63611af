import Foundation
import Storage
import TestSupport
import Testing

/// API tokens on both backends: what the test created is what verifies, and nothing else does.
@Suite struct TokenStoreTests {
    @Test(arguments: Backend.allCases) func createdTokensVerifyUntilRevokedAndWrongSecretsNever(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let tokens = f.store.tokens
        let ingest = try tokens.create(scope: .ingest, namespace: "ios-app", name: "iOS SDK")
        f.clock.advance(seconds: 1)
        let read = try tokens.create(scope: .read, name: "dashboard")
        #expect(try tokens.verify(ingest.token) == ingest.record)
        #expect(try tokens.verify(read.token)?.scope == .read)
        // The same id with another secret, a token of another id, and text that is no token.
        let forged = String(ingest.token.dropLast()) + (ingest.token.hasSuffix("0") ? "1" : "0")
        #expect(try tokens.verify(forged) == nil)
        #expect(try tokens.verify("sl_999_" + String(repeating: "a", count: 64)) == nil)
        #expect(try tokens.verify("Bearer nonsense") == nil)
        // Another connection (another node) sees the same tokens, and a revocation at once.
        let elsewhere = try f.another().tokens
        #expect(try elsewhere.verify(read.token) == read.record)
        let revoked = try tokens.revoke(id: read.record.id)
        #expect(revoked.revokedAt == f.clock.now)
        #expect(try elsewhere.verify(read.token) == nil)
        #expect(throws: TokenError.alreadyRevoked(read.record.id)) { try tokens.revoke(id: read.record.id) }
        #expect(throws: TokenError.notFound(12345)) { try tokens.revoke(id: 12345) }
        #expect(throws: TokenError.namespaceNeedsIngestScope(.read)) { try tokens.create(scope: .read, namespace: "ios-app") }
        try tokens.touch(id: ingest.record.id, at: 42)
        let listed = try tokens.list()
        #expect(listed.map(\.id) == [ingest.record.id, read.record.id])
        #expect(listed.map(\.name) == ["iOS SDK", "dashboard"])
        #expect(listed[0].lastUsedAt == 42 && listed[0].namespace == "ios-app" && listed[1].isRevoked)
    }

    /// What every node of one database must agree on for the web view's sessions: the first
    /// key proposed is the one all keep, and a sign-out recorded on one connection is read on
    /// another, never moved back by an older one.
    @Test(arguments: Backend.allCases) func theSessionKeyAndSignOutsAreSharedByEveryConnection(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let other = try f.another()
        let first: [UInt8] = Array(repeating: 1, count: 32), second: [UInt8] = Array(repeating: 2, count: 32)
        #expect(try f.store.tokens.sessionKey(proposing: first) == first)
        #expect(try other.tokens.sessionKey(proposing: second) == first)
        let created = try f.store.tokens.create(scope: .read, name: "web")
        #expect(try other.tokens.storedForSession(id: created.record.id)?.sessionsEndedAt == nil)
        try f.store.tokens.endSessions(of: created.record.id, at: 1_000)
        try other.tokens.endSessions(of: created.record.id, at: 900)
        #expect(try other.tokens.storedForSession(id: created.record.id)?.sessionsEndedAt == 1_000)
        #expect(try f.sqlInt("SELECT ended_at FROM web_sign_outs WHERE token_id = \(created.record.id)") == 1_000)
        #expect(try other.tokens.storedForSession(id: created.record.id + 1) == nil)
    }
}
