import ArgumentParser
import Foundation
import Storage
import APIModel
import JSONFormat

/// `stackline tokens …`: API tokens for `stackline serve`.
struct TokensCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens",
        abstract: "Create, list and revoke API tokens for `stackline serve`.",
        discussion: """
            Tokens are stored as SHA-256 digests only: `create` prints a token once and it cannot \
            be shown again. Scopes: ingest (upload reports), symbols (upload debug files), read \
            (queries, metrics), worker (remote workers), admin (everything).
            """,
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a token and print it (once).")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "What the token may do: ingest, symbols, read, worker or admin.") var scope: TokenScope
        @Option(help: "Restrict an ingest token to this namespace; reports it uploads are tagged with it.")
        var namespace: String?
        @Option(help: "A name to recognise the token by in `tokens list`.") var name: String?
        @Flag(help: "Machine-readable output: {\"id\", \"token\", \"scope\", …}.") var json = false

        func run() throws {
            // Tokens come before the first `serve`, so this may create the database.
            let created: CreatedToken
            do { created = try database.openOrCreate().tokens.create(scope: scope, namespace: namespace, name: name) } catch let error as TokenError {
                throw fail("stackline tokens create: \(error.description)")
            }
            if json {
                var view = TokenJSON(created.record)
                view.token = created.token
                print(try encodeJSON(view))
                return
            }
            print(created.token)
            printError("token \(created.record.id) (\(scope.rawValue)) created; it is shown only this once")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List tokens (never their secrets).")
        @OptionGroup var database: DatabaseOptions
        @Flag(help: "Machine-readable output.") var json = false

        func run() throws {
            let tokens = try database.open(for: "tokens list").tokens.list()
            if json {
                print(try encodeJSON(tokens.map(TokenJSON.init)))
                return
            }
            if tokens.isEmpty {
                print("no tokens")
                return
            }
            var table = Table("ID", "SCOPE", "NAMESPACE", "NAME", "CREATED", "LAST USED", "REVOKED")
            for t in tokens {
                table.add(
                    String(t.id), t.scope.rawValue, t.namespace ?? "-", t.name ?? "-", Date(milliseconds: t.createdAt).rfc3339,
                    t.lastUsedAt.map { Date(milliseconds: $0).rfc3339 } ?? "-", t.revokedAt.map { Date(milliseconds: $0).rfc3339 } ?? "-")
            }
            print(table.render())
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a token: it stops working at once.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The token's id, as `tokens list` prints it.") var id: Int64
        @Flag(help: "Machine-readable output: the revoked token.") var json = false

        func run() throws {
            let revoked: TokenRecord
            do { revoked = try database.open(for: "tokens revoke").tokens.revoke(id: id) } catch let error as TokenError {
                throw fail("stackline tokens revoke: \(error.description)")
            }
            if json {
                print(try encodeJSON(TokenJSON(revoked)))
            } else {
                printLine("revoked token \(revoked.id) (\(revoked.scope.rawValue)\(revoked.name.map { ", \($0)" } ?? ""))")
            }
        }
    }
}

/// The `tokens … --json` shape of one token; `token` only in `create`'s answer.
struct TokenJSON: Encodable {
    var id: Int64
    var scope: String
    var namespace: String?
    var name: String?
    var createdAt: Date
    var lastUsedAt: Date?
    var revokedAt: Date?
    var token: String?

    init(_ t: TokenRecord) {
        id = t.id
        scope = t.scope.rawValue
        namespace = t.namespace
        name = t.name
        createdAt = Date(milliseconds: t.createdAt)
        lastUsedAt = t.lastUsedAt.map { Date(milliseconds: $0) }
        revokedAt = t.revokedAt.map { Date(milliseconds: $0) }
    }
}

extension TokenScope: ExpressibleByArgument {}
