import Foundation
import PostgresClient
import SQLInterface
import TestSupport
import Testing

/// The libpq wrapper against a real PostgreSQL 15 (TestSupport's `PostgresCluster`): each test
/// in a database of its own on the process's shared cluster, except the restart test, which has
/// a cluster of its own.
@Suite struct PostgresConnectionTests {
    static func connect() throws -> PostgresConnection {
        let cluster = try PostgresCluster.shared.get()
        return try PostgresConnection(url: try cluster.makeDatabase())
    }

    @Test func everyValueKindRoundTrips() throws {
        let db = try Self.connect()
        #expect(db.dialect == .postgres)
        try db.executeScript("CREATE TABLE t (id bigint PRIMARY KEY, i bigint, r double precision, s text, b bytea)")
        let allBytes = Data((0...255).map { UInt8($0) })
        let written: [[SQLValue]] = [
            [.integer(1), .integer(Int64.min), .real(-0.1), .text("it's \"quoted\" -- ? 'x'"), .blob(allBytes)],
            [.integer(2), .integer(Int64.max), .real(1e300), .text("Grüße, 日本, 🙂"), .blob(Data())],
            [.integer(3), .integer(0), .real(.pi), .text(""), .blob(Data([0]))],
            [.integer(4), .null, .null, .null, .null],
            [.integer(5), .integer(-1), .real(-.infinity), .text("\\x00 not a blob"), .blob(Data("text".utf8))],
        ]
        for row in written {
            let changed = try db.execute("INSERT INTO t (id, i, r, s, b) VALUES (?, ?, ?, ?, ?)", row)
            #expect(changed == 1)
        }
        let read = try db.rows("SELECT id, i, r, s, b FROM t ORDER BY id")
        #expect(read.map(\.values) == written)
        // A value bound in a WHERE comes back as the row it matches.
        let byMin = try db.row("SELECT id FROM t WHERE i = ?", Int64.min)
        #expect(try byMin?.int64(0) == 1)
        let byBlob = try db.row("SELECT id FROM t WHERE b = ?", allBytes)
        #expect(try byBlob?.int64(0) == 1)
        let byEmptyBlob = try db.row("SELECT id FROM t WHERE b = ?", Data())
        #expect(try byEmptyBlob?.int64(0) == 2)
        let byText = try db.row("SELECT id FROM t WHERE s = ?", "Grüße, 日本, 🙂")
        #expect(try byText?.int64(0) == 2)
        let nulls = try db.row("SELECT count(*) FROM t WHERE i IS NULL AND r IS NULL AND s IS NULL AND b IS NULL")
        #expect(try nulls?.int(0) == 1)
    }

    @Test func resultTypesDecodeByTheirOID() throws {
        let db = try Self.connect()
        let row = try #require(
            try db.row(
                "SELECT 7::int2, 8::int4, 9::int8, 1.5::float4, 2.25::float8, true, false, 'n'::name, 'c'::char(3), 'v'::varchar, '\\x0102'::bytea"
            ))
        #expect(
            row.values == [
                .integer(7), .integer(8), .integer(9), .real(1.5), .real(2.25), .integer(1), .integer(0), .text("n"), .text("c  "), .text("v"),
                .blob(Data([1, 2])),
            ])
        // Other types come as their text form (the statement asks for text results), but for
        // numeric, which is what SUM of integers answers: an integer when it is one, else a real.
        let other = try #require(try db.row("SELECT 12.50::numeric, '{\"a\": 1}'::jsonb, 5::int8, '\\xff'::bytea, 7::numeric"))
        #expect(other.values == [.real(12.5), .text("{\"a\": 1}"), .integer(5), .blob(Data([0xff])), .integer(7)])
    }

    @Test func placeholdersAreNumberedOutsideLiteralsAndComments() throws {
        let db = try Self.connect()
        let row = try #require(try db.row("SELECT '?' , ?", "bound"))
        #expect(row.values == [.text("?"), .text("bound")])
        let quoted = try #require(
            try db.row(
                """
                SELECT 'it''s ?', "?col", ? -- a comment with ?
                FROM (SELECT 1 AS "?col") AS x /* block ? /* nested ? */ */ WHERE E'\\'?' = ? AND $$?$$ = '?'
                """, Int64(42), "'?"))
        #expect(quoted.values == [.text("it's ?"), .integer(1), .integer(42)])
        // The same text again runs the cached statement.
        let again = try #require(try db.row("SELECT '?' , ?", "again"))
        #expect(again.values == [.text("?"), .text("again")])
        // A mismatched count is an error before anything is sent.
        #expect(throws: PostgresError.self) { try db.rows("SELECT ?, ?", [.integer(1)]) }
    }

    @Test func parameterTypesAreInferredOrDeclared() throws {
        let db = try Self.connect()
        try db.executeScript("CREATE TABLE t (id bigint PRIMARY KEY, n bigint, small int4, label text, flag boolean, amount numeric)")
        try db.execute("INSERT INTO t (id, n, small, label, flag, amount) VALUES (?, ?, ?, ?, ?, ?)", 1, Int64.max, 5, "one", true, 12)
        try db.execute("INSERT INTO t (id, n, small, label, flag, amount) VALUES (?, ?, ?, ?, ?, ?)", 2, nil as Int64?, nil as Int?, nil as String?, false, 0.5)
        #expect(try db.row("SELECT id FROM t WHERE n = ?", Int64.max)?.int64(0) == 1)
        #expect(try db.row("SELECT small FROM t WHERE small = ?", 5)?.int64(0) == 5)
        #expect(try db.row("SELECT flag, amount FROM t WHERE id = ?", 1)?.values == [.integer(1), .integer(12)])
        #expect(try db.row("SELECT amount FROM t WHERE id = ?", 2)?.values == [.real(0.5)])
        // Nothing around the placeholder says its type (the server would call it text, or
        // nothing at all): it is declared from the value, which comes back as it went in.
        #expect(try db.row("SELECT ?", 41)?.values == [.integer(41)])
        #expect(try db.row("SELECT ?, ?", 41, Data([9]))?.values == [.integer(41), .blob(Data([9]))])
        #expect(try db.row("SELECT ? IS NULL", 41)?.values == [.integer(0)])
        #expect(try db.row("SELECT ? IS NULL", [SQLValue.null])?.values == [.integer(1)])
        // Where the text type comes from context, an integer goes as its text.
        #expect(try db.row("SELECT id FROM t WHERE label = ?", 1)?.values == nil)
        try db.execute("UPDATE t SET label = ? WHERE id = ?", 41, 2)
        #expect(try db.row("SELECT id, label FROM t WHERE label = ?", 41)?.values == [.integer(2), .text("41")])
        #expect(try db.row("SELECT COALESCE(?, 'a')", 41)?.values == [.text("41")])
        #expect(try db.row("SELECT ?", 2.5)?.values == [.real(2.5)])
        #expect(try db.row("SELECT ?", "text")?.values == [.text("text")])
        #expect(try db.row("SELECT ?", Data([1, 2]))?.values == [.blob(Data([1, 2]))])
        #expect(try db.row("SELECT ?", [SQLValue.null])?.values == [.null])
        #expect(try db.row("SELECT ? + 1", 41)?.values == [.integer(42)])
        // `? + 1` is int4 + int4 to PostgreSQL, so a value beyond int4 is refused, not wrapped
        // (a statement that needs more says so: `CAST(? AS bigint) + 1`).
        let beyond = #expect(throws: PostgresError.self) { try db.row("SELECT ? + 1", Int64(1) << 40) }
        #expect(beyond?.sqlState == "22003")
        #expect(try db.row("SELECT CAST(? AS bigint) + 1", Int64(1) << 40)?.values == [.integer((1 << 40) + 1)])
        #expect(try db.row("SELECT COALESCE(?, n) FROM t WHERE id = 2", 7)?.values == [.integer(7)])
        #expect(try db.row("SELECT COALESCE(?, n) FROM t WHERE id = 1", [SQLValue.null])?.values == [.integer(Int64.max)])
        #expect(try db.row("SELECT COALESCE(?, label) FROM t WHERE id = 1", [SQLValue.null])?.values == [.text("one")])
        // Inside a transaction, the first try at inferring (which fails for `SELECT ?`) leaves it intact.
        let inside = try db.transaction { tx in
            try tx.execute("INSERT INTO t (id) VALUES (?)", 3)
            return try tx.row("SELECT ? AS inside, ?", 1.25, nil as Int?)?.values
        }
        #expect(inside == [.real(1.25), .null])
        #expect(try db.row("SELECT count(*) FROM t")?.int(0) == 3)
    }

    @Test func rowsChangedAndReturnedRows() throws {
        let db = try Self.connect()
        try db.executeScript(
            """
            CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, k text UNIQUE, n bigint NOT NULL);
            CREATE TABLE empty (x bigint);
            """)
        for (k, n) in [("a", 1), ("b", 2), ("c", 3), ("d", 4)] {
            #expect(try db.execute("INSERT INTO t (k, n) VALUES (?, ?)", k, n) == 1)
        }
        #expect(try db.execute("UPDATE t SET n = n + 10 WHERE n >= ?", 3) == 2)
        #expect(try db.execute("DELETE FROM t WHERE k = ?", "a") == 1)
        #expect(try db.execute("DELETE FROM t WHERE k = ?", "a") == 0)
        #expect(try db.execute("INSERT INTO t (k, n) VALUES (?, ?) ON CONFLICT (k) DO NOTHING", "b", 99) == 0)
        #expect(try db.execute("INSERT INTO t (k, n) VALUES (?, ?) ON CONFLICT (k) DO NOTHING", "e", 5) == 1)
        #expect(try db.execute("CREATE INDEX t_n ON t (n)") == 0)
        let returned = try db.rows("UPDATE t SET n = n * 2 WHERE k IN (\(sqlPlaceholders(2))) RETURNING k, n", "b", "c")
        #expect(Set(returned.map(\.values)) == [[.text("b"), .integer(4)], [.text("c"), .integer(26)]])
        let inserted = try db.rows("INSERT INTO t (k, n) VALUES (?, ?) RETURNING id, k", "f", 6)
        #expect(inserted.count == 1)
        #expect(try inserted[0].string(1) == "f")
        #expect(try db.rows("SELECT x FROM empty").isEmpty)
        let all = try db.rows("SELECT k, n FROM t ORDER BY k").map { try [$0.string(0), String($0.int64(1))] }
        #expect(all == [["b", "4"], ["c", "26"], ["d", "14"], ["e", "5"], ["f", "6"]])
    }

    @Test func transactionsCommitOrLeaveNothing() throws {
        let db = try Self.connect()
        try db.executeScript("CREATE TABLE t (id bigint PRIMARY KEY)")
        let committed = try db.transaction { tx in
            try tx.execute("INSERT INTO t (id) VALUES (?)", 1)
            try tx.execute("INSERT INTO t (id) VALUES (?)", 2)
            return "done"
        }
        #expect(committed == "done")

        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try db.transaction { tx in
                try tx.execute("INSERT INTO t (id) VALUES (?)", 3)
                throw Abandon()
            }
        }
        // A failing statement rolls back what came before it in the transaction.
        let failure = #expect(throws: PostgresError.self) {
            try db.transaction { tx in
                try tx.execute("INSERT INTO t (id) VALUES (?)", 4)
                try tx.execute("INSERT INTO t (id) VALUES (?)", 1)
            }
        }
        #expect(failure?.isUniqueViolation == true)
        // An error caught inside the body does not let the aborted transaction commit.
        #expect(throws: PostgresError.self) {
            try db.transaction { tx in
                try tx.execute("INSERT INTO t (id) VALUES (?)", 5)
                _ = try? tx.execute("INSERT INTO t (id) VALUES (?)", 1)
            }
        }
        let ids = try db.rows("SELECT id FROM t ORDER BY id").map { try $0.int64(0) }
        #expect(ids == [1, 2])
        // And the connection is usable after each.
        #expect(try db.execute("INSERT INTO t (id) VALUES (?)", 6) == 1)
    }

    @Test func serverErrorsCarryTheirSQLState() throws {
        let db = try Self.connect()
        try db.executeScript("CREATE TABLE t (k text PRIMARY KEY)")
        try db.execute("INSERT INTO t (k) VALUES (?)", "same")
        let unique = #expect(throws: PostgresError.self) { try db.execute("INSERT INTO t (k) VALUES (?)", "same") }
        #expect(unique?.sqlState == "23505")
        #expect(unique?.isUniqueViolation == true)
        #expect(unique?.isSerializationFailure == false)
        #expect(unique?.isDeadlock == false)
        #expect(unique?.description.contains("t_pkey") == true)

        let syntax = #expect(throws: PostgresError.self) { try db.rows("SELEC k FROM t WHERE k = ?", "x") }
        guard case .statement(let state, let message, let sql)? = syntax else {
            Issue.record("not a statement error: \(String(describing: syntax))")
            return
        }
        #expect(state == "42601")
        #expect(message.contains("syntax error at or near \"SELEC\""))
        #expect(sql == "SELEC k FROM t WHERE k = ?")
        let script = #expect(throws: PostgresError.self) { try db.executeScript("CREATE TABLE t (k text)") }
        #expect(script?.sqlState == "42P07")
        // A text the server cannot store is refused, not cut at the NUL.
        let nul = #expect(throws: PostgresError.self) { try db.execute("INSERT INTO t (k) VALUES (?)", "a\u{0}b") }
        #expect(nul?.sqlState != nil)
        #expect(try db.rows("SELECT k FROM t").map { try $0.string(0) } == ["same"])
    }

    @Test func connectFailureIsReadableAndHidesThePassword() throws {
        let port = try freeLoopbackPort()
        let failure = #expect(throws: PostgresError.self) {
            try PostgresConnection(url: "postgres://postgres@127.0.0.1:\(port)/nothing?connect_timeout=5", password: "s3cret-pass")
        }
        guard case .connect(let message)? = failure else {
            Issue.record("not a connect error: \(String(describing: failure))")
            return
        }
        #expect(message.contains("127.0.0.1"))
        #expect(message.contains("\(port)"))
        #expect(failure?.description.contains("s3cret-pass") == false)
        // Nor a password written into the URL itself.
        let inURL = #expect(throws: PostgresError.self) {
            try PostgresConnection(url: "postgres://postgres:url-s3cret@127.0.0.1:\(port)/nothing?connect_timeout=5")
        }
        #expect(inURL?.description.contains("url-s3cret") == false)
        // A malformed URL is a connect error too.
        #expect(throws: PostgresError.self) { try PostgresConnection(url: "postgres://[bad") }

        // A trust cluster ignores the password: the connection works and it is not echoed anywhere.
        let cluster = try PostgresCluster.shared.get()
        let db = try PostgresConnection(url: try cluster.makeDatabase(), password: "s3cret-pass")
        let missing = #expect(throws: PostgresError.self) { try db.rows("SELECT * FROM missing") }
        #expect(missing?.sqlState == "42P01")
        #expect(missing?.description.contains("s3cret-pass") == false)
    }

    /// On a cluster that asks TCP clients for a password (SCRAM): the password parameter is what
    /// logs in, and a wrong one is refused without being echoed.
    @Test func aPasswordGoesAsItsOwnParameter() throws {
        let cluster = try PostgresCluster.start(passwordAuthentication: true)
        defer { cluster.stop() }
        try cluster.psql("CREATE ROLE app LOGIN PASSWORD 's3cret-pass'")
        let url = "postgres://app@127.0.0.1:\(cluster.port)/postgres"

        let db = try PostgresConnection(url: url, password: "s3cret-pass")
        #expect(try db.row("SELECT current_user")?.values == [.text("app")])
        // A password in the URL works too, for deployments that keep it there.
        let inURL = try PostgresConnection(url: "postgres://app:s3cret-pass@127.0.0.1:\(cluster.port)/postgres")
        #expect(try inURL.row("SELECT ?", 1)?.values == [.integer(1)])

        let wrong = #expect(throws: PostgresError.self) { try PostgresConnection(url: url, password: "wrong-s3cret") }
        guard case .connect(let message)? = wrong else {
            Issue.record("not a connect error: \(String(describing: wrong))")
            return
        }
        #expect(message.contains("password authentication failed"))
        #expect(wrong?.description.contains("wrong-s3cret") == false)
        let wrongInURL = #expect(throws: PostgresError.self) {
            try PostgresConnection(url: "postgres://app:url-wrong-s3cret@127.0.0.1:\(cluster.port)/postgres")
        }
        #expect(wrongInURL?.description.contains("url-wrong-s3cret") == false)
    }

    @Test func aRestartedServerIsNoticedAndResetReconnects() throws {
        let cluster = try PostgresCluster.start()
        defer { cluster.stop() }
        let db = try PostgresConnection(url: try cluster.makeDatabase())
        try db.executeScript("CREATE TABLE t (id bigint)")
        try db.execute("INSERT INTO t (id) VALUES (?)", 1)
        #expect(db.isConnected)

        try cluster.restart()
        var failed = false
        do {
            _ = try db.rows("SELECT id FROM t WHERE id = ?", 1)
        } catch let error as PostgresError {
            failed = true
            if case .connectionLost = error {} else { Issue.record("expected connectionLost, got \(error)") }
        }
        #expect(failed || !db.isConnected)
        #expect(!db.isConnected)

        try db.reset()
        #expect(db.isConnected)
        // The prepared statement went with the old session: it is prepared again.
        #expect(try db.rows("SELECT id FROM t WHERE id = ?", 1).map(\.values) == [[.integer(1)]])
        #expect(try db.execute("INSERT INTO t (id) VALUES (?)", 2) == 1)
    }
}
