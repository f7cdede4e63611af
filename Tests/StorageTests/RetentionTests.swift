import Foundation
import GRDB
import Storage
import ReportModel
import SQLInterface
import TestSupport
import Testing

/// Compressed results and `prune` on both backends, checked with plain SQL through the
/// engine's own shell; the migrations that convert old SQLite rows, and SQLite's vacuum.
@Suite struct RetentionTests {
    /// A result that compresses like a real one: repetitive JSON with varying addresses.
    static func resultJSON(_ n: Int, frames: Int = 300) -> Data {
        let frameList = (0..<frames).map { i in
            #"{"index":\#(i),"address":"0x\#(String(0x1_0000_0000 + n * 7919 + i * 52, radix: 16))","status":"missingDebugFile","image":"App"}"#
        }
        return Data(#"{"report":\#(n),"threads":[{"frames":[\#(frameList.joined(separator: ","))]}]}"#.utf8)
    }

    /// zlib inflate by Perl's Compress::Zlib: an implementation independent of ours.
    static func perlInflate(_ data: Data) throws -> Data {
        let out = try runProcess(
            "/usr/bin/perl",
            ["-MCompress::Zlib", "-e", "local $/; binmode STDIN; binmode STDOUT; print uncompress(<STDIN>) // die 'not zlib'"],
            stdin: data)
        #expect(out.succeeded, "\(out.summary)")
        return Data(out.stdout.utf8)
    }

    /// `hex` (either case) as bytes; nil unless it is whole bytes of hex digits.
    static func bytes(hex: String) -> Data? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out = Data(capacity: digits.count / 2)
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i...i + 1], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        return out
    }

    @Test(arguments: Backend.allCases) func resultsAreStoredCompressedWithTheirSize(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let json = Self.resultJSON(1)
        let id = try f.store.submit(f.report(1)).reportId
        let job = try #require(try f.store.claim(leaseMs: 30_000))
        try f.store.complete(jobId: job.jobId, token: job.leaseToken, result: JobResult(symbolicatedJSON: json, status: .unsymbolicated))

        // The engines name a value's type and write bytes as hex with different functions.
        let (typeOf, hex, binary) = switch backend {
        case .sqlite: ("typeof(symbolicated)", "hex(symbolicated)", "blob")
        case .postgres: ("pg_typeof(symbolicated)::text", "encode(symbolicated, 'hex')", "bytea")
        }
        let row = try #require(try f.sql(
            "SELECT \(typeOf) AS t, \(hex) AS h, symbolicated_size AS size FROM results WHERE report_id = \(id)").first)
        let type = try #require(row["t"] as? String), size = try #require(row["size"] as? Int)
        let hexText = try #require(row["h"] as? String)
        let stored = try #require(Self.bytes(hex: hexText))
        #expect(type == binary)
        #expect(size == json.count)
        #expect(stored.count * 10 < json.count, "\(stored.count) bytes stored for \(json.count)")
        #expect(try Self.perlInflate(stored) == json)
        #expect(try f.store.result(reportId: id)?.symbolicatedJSON == json)
    }

    // SQLite-only: it rewrites a SQLite file into the v2 layout and checks GRDB's migration of it.
    @Test func migrationCompressesResultsStoredAsText() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        var ids: [Int64] = []
        for n in 0..<3 {
            ids.append(try GroupLedgerTests.process(f, n, version: "1.0", group: GroupLedgerTests.group("aaaa")))
        }
        // Turn the file back into the v2 layout: results as JSON text, migration v3 not applied.
        let queue = try DatabaseQueue(path: f.db.path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: """
                CREATE TABLE results_v2 (
                    report_id INTEGER NOT NULL UNIQUE REFERENCES reports(id) ON DELETE CASCADE,
                    symbolicated TEXT NOT NULL, status TEXT NOT NULL, missing_build_ids TEXT NOT NULL,
                    fingerprint TEXT, completed_at INTEGER NOT NULL);
                """)
            for id in ids {
                try db.execute(
                    sql: """
                        INSERT INTO results_v2
                        SELECT report_id, ?, status,
                               (SELECT json_group_array(build_id) FROM missing_symbols m WHERE m.report_id = results.report_id),
                               fingerprint, completed_at
                        FROM results WHERE report_id = ?
                        """,
                    arguments: [String(decoding: Self.resultJSON(Int(id)), as: UTF8.self), id])
            }
            try db.execute(sql: """
                DROP TABLE results;
                ALTER TABLE results_v2 RENAME TO results;
                CREATE INDEX results_fingerprint ON results (fingerprint);
                DELETE FROM grdb_migrations WHERE identifier LIKE 'v3%' OR identifier LIKE 'v4%';
                """)
            try CountedReadsTests.undoCountedReads(db)
        }
        try queue.close()

        let reopened = try ServiceDatabase(path: f.db.path)
        for id in ids {
            #expect(try reopened.result(reportId: id)?.symbolicatedJSON == Self.resultJSON(Int(id)))
            #expect(try reopened.result(reportId: id)?.fingerprint == "aaaa")
        }
        let check = try DatabaseQueue(path: f.db.path)
        let types = try check.read { try String.fetchAll($0, sql: "SELECT DISTINCT typeof(symbolicated) FROM results") }
        #expect(types == ["blob"])
        try GroupLedgerTests.expectLedgerMatchesResults(f)
    }

    /// Each result's stored (compressed) bytes, by report id.
    static func storedResults(_ db: Database) throws -> [Int64: Data] {
        var out: [Int64: Data] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT report_id, symbolicated FROM results") {
            out[row["report_id"]] = row["symbolicated"]
        }
        return out
    }

    // SQLite-only: it rewrites a SQLite file into the v3 layout and checks GRDB's migration of it.
    @Test func migrationMovesMissingBuildIdsIntoTheTableAndDropsTheColumn() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let a = try GroupLedgerTests.process(f, 0, version: "1.0", group: GroupLedgerTests.group("aaaa"), missing: ["ab01", "cd02"])
        let b = try GroupLedgerTests.process(f, 1, version: "1.0", group: GroupLedgerTests.group("aaaa"), missing: ["ef03"])
        let c = try GroupLedgerTests.process(f, 2, version: "2.0", group: GroupLedgerTests.group("bbbb"))
        // Back to the v3 layout, with a column and a table that disagree: the table lost a row
        // of `a`, the column of `b` names an id the table never had, and `c`'s is not JSON.
        let column: [Int64: String] = [a: #"["ab01","cd02"]"#, b: #"["ef03","0123"]"#, c: "not json"]
        let queue = try DatabaseQueue(path: f.db.path)
        let stored: [Int64: Data] = try queue.writeWithoutTransaction { db in
            try db.execute(sql: """
                CREATE TABLE results_v3 (
                    report_id INTEGER NOT NULL UNIQUE REFERENCES reports(id) ON DELETE CASCADE,
                    symbolicated BLOB NOT NULL, symbolicated_size INTEGER NOT NULL, status TEXT NOT NULL,
                    missing_build_ids TEXT NOT NULL, fingerprint TEXT, completed_at INTEGER NOT NULL);
                """)
            for (id, missing) in column {
                try db.execute(
                    sql: """
                        INSERT INTO results_v3
                        SELECT report_id, symbolicated, symbolicated_size, status, ?, fingerprint, completed_at
                        FROM results WHERE report_id = ?
                        """,
                    arguments: [missing, id])
            }
            try db.execute(sql: """
                DROP TABLE results;
                ALTER TABLE results_v3 RENAME TO results;
                CREATE INDEX results_fingerprint ON results (fingerprint);
                DELETE FROM missing_symbols WHERE build_id = 'cd02';
                DELETE FROM grdb_migrations WHERE identifier LIKE 'v4%';
                """)
            try CountedReadsTests.undoCountedReads(db)
            return try Self.storedResults(db)
        }
        try queue.close()

        let reopened = try ServiceDatabase(path: f.db.path)
        let check = try DatabaseQueue(path: f.db.path)
        let columns = try check.read { try String.fetchAll($0, sql: "SELECT name FROM pragma_table_info('results') ORDER BY cid") }
        let rows = try check.read { db in
            try Row.fetchAll(db, sql: "SELECT report_id, build_id, image_name FROM missing_symbols ORDER BY report_id, build_id")
                .map { row -> String in
                    let id: Int64 = row["report_id"], buildId: String = row["build_id"], name: String? = row["image_name"]
                    return "\(id) \(buildId) \(name ?? "-")"
                }
        }
        let after = try check.read(Self.storedResults)
        #expect(columns == ["report_id", "symbolicated", "symbolicated_size", "status", "fingerprint", "completed_at", "received_at"])
        // Rows already there keep their image names; ids only the column had arrive without one.
        #expect(rows == ["\(a) ab01 Libab", "\(a) cd02 -", "\(b) 0123 -", "\(b) ef03 Libef"])
        #expect(after == stored, "compressed results are carried over byte for byte")
        #expect(try reopened.result(reportId: a)?.missingBuildIds.map(\.hex) == ["ab01", "cd02"])
        #expect(try reopened.result(reportId: b)?.missingBuildIds.map(\.hex) == ["ef03", "0123"])
        #expect(try reopened.result(reportId: c)?.missingBuildIds == [])
        #expect(try reopened.result(reportId: c)?.symbolicatedJSON == Data("{}".utf8))
        #expect(try reopened.missingSymbols().map(\.file.buildID.hex).sorted() == ["0123", "ab01", "cd02", "ef03"])
        try GroupLedgerTests.expectLedgerMatchesResults(f)
    }

    @Test(arguments: Backend.allCases) func aReportWhoseStoredBytesAreUnreadableFailsOnceAndTheNextIsClaimed(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let bad = try f.store.submit(f.report(1)).reportId
        let good = try f.store.submit(f.report(2)).reportId
        _ = try f.store.write { try $0.execute("UPDATE reports SET raw = ? WHERE id = ?", Data([0x00, 0x11, 0x22, 0x33]), bad) }
        let claimed = try #require(try f.store.claim(leaseMs: 30_000))
        #expect(claimed.reportId == good)
        let status = try #require(try f.store.jobStatus(reportId: bad))
        #expect(status.state == .failed)
        #expect(status.attempts == 1)
        #expect(status.lastError?.hasPrefix("report \(bad): stored bytes are unreadable") == true)
    }

    /// Reports over 100 days in 9 groups of uneven size, several versions, some missing debug
    /// files; some old reports queued, running, failed or reprocessed into another group.
    struct Corpus {
        var ids: [Int64] = []
        var receivedAt: [Int64: Int64] = [:]
        var active: Set<Int64> = []
    }

    static func buildCorpus(_ f: StoreFixture, count: Int = 240) throws -> Corpus {
        var corpus = Corpus()
        var rng = SeededGenerator(seed: 42)
        var reprocessLater: [Int64] = []
        let versions: [String?] = ["1.0", "1.1", "2.0", nil]
        for n in 0..<count {
            f.clock.advance(milliseconds: Int64.random(in: 1...Int64(2 * 86_400_000 * 100 / count), using: &rng))
            let version = versions[Int.random(in: 0..<versions.count, using: &rng)]
            let id = try f.store.submit(
                NewReport(raw: Data("report \(n)".utf8), format: "test", kind: .crash, app: "App", version: version)
            ).reportId
            corpus.ids.append(id)
            corpus.receivedAt[id] = f.clock.now
            let job = try #require(try f.store.claim(leaseMs: 86_400_000 * 365))
            switch n % 23 {
            case 5:
                corpus.active.insert(id)  // left running
                continue
            case 11:
                _ = try f.store.fail(jobId: job.jobId, token: job.leaseToken, failure: .permanent("input error"), policy: RetryPolicy())
                continue
            default: break
            }
            // Skewed: group g holds about 1/2^(g+1) of the reports, so small groups are all old.
            let g = 7 - Int(log2(Double(Int.random(in: 1...255, using: &rng))))
            let missing = n % 4 == 0 ? ["ab0\(n % 3)cd"] : []
            try f.store.complete(
                jobId: job.jobId, token: job.leaseToken,
                result: JobResult(
                    symbolicatedJSON: resultJSON(n), status: missing.isEmpty ? .complete : .partial,
                    group: GroupLedgerTests.group("g\(g)"),
                    missingImages: try missing.map { MissingDebugFile(buildID: try BuildID($0), imageName: "Lib") }))
            if n % 17 == 3 { reprocessLater.append(id) }
        }
        // A few old reports move to another group on reprocessing, as `symbols add` causes.
        for id in corpus.ids.prefix(40) where !corpus.active.contains(id) && id % 5 == 0 {
            _ = try f.store.enqueueReprocessing(reportId: id)
            let job = try #require(try f.store.claim(leaseMs: 60_000))
            #expect(job.reportId == id)
            try f.store.complete(
                jobId: job.jobId, token: job.leaseToken,
                result: JobResult(symbolicatedJSON: resultJSON(Int(id)), status: .complete, group: GroupLedgerTests.group("moved")))
        }
        // Reprocessing queued and never run: these reports must survive a prune.
        for id in reprocessLater {
            _ = try f.store.enqueueReprocessing(reportId: id)
            corpus.active.insert(id)
        }
        return corpus
    }

    /// Every table against the surviving reports, in plain SQL through the engine's own shell.
    static func expectConsistent(_ f: StoreFixture, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try GroupLedgerTests.expectLedgerMatchesResults(f, sourceLocation: sourceLocation)
        let groups = try f.sql(
            """
            SELECT g.fingerprint, g.count, g.representative_report_id AS representative,
                   (SELECT COUNT(*) FROM results s WHERE s.fingerprint = g.fingerprint) AS members,
                   (SELECT SUM(v.count) FROM group_versions v WHERE v.fingerprint = g.fingerprint) AS version_sum,
                   (SELECT COUNT(*) FROM results s WHERE s.report_id = g.representative_report_id AND s.fingerprint = g.fingerprint)
                       AS representative_is_member
            FROM groups g
            """)
        for row in groups {
            let fingerprint = try #require(row["fingerprint"] as? String, sourceLocation: sourceLocation)
            let members = try #require(row["members"] as? Int, sourceLocation: sourceLocation)
            #expect(row["count"] as? Int == members, "\(fingerprint)", sourceLocation: sourceLocation)
            #expect(row["version_sum"] as? Int == members, "\(fingerprint) versions", sourceLocation: sourceLocation)
            let representative = row["representative"] as? Int
            #expect(
                (row["representative_is_member"] as? Int ?? 0) > 0,
                "\(fingerprint) representative \(representative.map(String.init) ?? "nil")", sourceLocation: sourceLocation)
        }
        let orphans = try f.sqlInt(
            """
            SELECT (SELECT COUNT(*) FROM jobs WHERE report_id NOT IN (SELECT id FROM reports))
                 + (SELECT COUNT(*) FROM results WHERE report_id NOT IN (SELECT id FROM reports))
                 + (SELECT COUNT(*) FROM missing_symbols WHERE report_id NOT IN (SELECT id FROM reports))
                 + (SELECT COUNT(*) FROM group_versions WHERE fingerprint NOT IN (SELECT fingerprint FROM groups)) AS orphans
            """)
        #expect(orphans == 0, sourceLocation: sourceLocation)
    }

    static func surviving(_ f: StoreFixture) throws -> Set<Int64> {
        Set(try f.sql("SELECT id FROM reports").map { row in
            guard let id = row["id"] as? Int else { throw TestSupportError("unexpected row \(row)") }
            return Int64(id)
        })
    }

    @Test(arguments: Backend.allCases, [1, 7, 500])
    func pruneDeletesOldReportsAndKeepsEveryCountExact(_ backend: Backend, batchSize: Int) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let corpus = try Self.buildCorpus(f)
        try Self.expectConsistent(f)
        let cutoff = f.clock.now - 30 * 86_400_000
        let expected = Set(corpus.ids.filter { corpus.receivedAt[$0]! >= cutoff || corpus.active.contains($0) })
        #expect(expected.count < corpus.ids.count / 2, "most of the corpus is old")
        let before = try f.store.groups(GroupFilter(limit: 100))
        let groupsBefore = Set(before.map(\.fingerprint))

        let outcome = try f.store.prune(PruneRequest(receivedBefore: cutoff, batchSize: batchSize))
        #expect(try Self.surviving(f) == expected)
        #expect(outcome.reportsDeleted == corpus.ids.count - expected.count)
        #expect(outcome.keptActive == corpus.active.filter { corpus.receivedAt[$0]! < cutoff }.count)
        try Self.expectConsistent(f)
        let after = try f.store.groups(GroupFilter(limit: 100))
        let groupsAfter = Set(after.map(\.fingerprint))
        #expect(outcome.groupsDeleted == groupsBefore.subtracting(groupsAfter).count)
        #expect(outcome.groupsDeleted > 0, "some small groups had only old reports")
        let shrunk = Set(before.filter { g in after.contains { $0.fingerprint == g.fingerprint && $0.count < g.count } }.map(\.fingerprint))
        #expect(outcome.groupsUpdated == shrunk.count)
        switch backend {
        case .sqlite:
            #expect(outcome.vacuum == .incremental, "a database this code created has incremental auto-vacuum")
            #expect(outcome.bytesAfter < outcome.bytesBefore)
        case .postgres:
            // Autovacuum makes the space reusable; a prune never rewrites tables (docs/backup.md).
            #expect(outcome.vacuum == .none)
        }

        // Nothing left to prune: a second pass deletes nothing.
        let again = try f.store.prune(PruneRequest(receivedBefore: cutoff, batchSize: batchSize))
        #expect(again.reportsDeleted == 0 && again.jobsDeleted == 0)
    }

    @Test(arguments: Backend.allCases) func keepGroupsKeepsEachGroupsRepresentative(_ backend: Backend) throws {
        let f = try StoreFixture(backend)
        defer { f.remove() }
        let corpus = try Self.buildCorpus(f)
        let before = try f.store.groups(GroupFilter(limit: 100))
        let cutoff = f.clock.now - 30 * 86_400_000
        let representatives = Set(before.compactMap(\.representativeReportId))
        let expected = Set(corpus.ids.filter {
            corpus.receivedAt[$0]! >= cutoff || corpus.active.contains($0) || representatives.contains($0)
        })

        let outcome = try f.store.prune(PruneRequest(receivedBefore: cutoff, keepGroups: true, batchSize: 10))
        #expect(try Self.surviving(f) == expected)
        #expect(outcome.groupsDeleted == 0)
        let after = try f.store.groups(GroupFilter(limit: 100))
        #expect(Dictionary(uniqueKeysWithValues: after.map { ($0.fingerprint, $0.representativeReportId) })
            == Dictionary(uniqueKeysWithValues: before.map { ($0.fingerprint, $0.representativeReportId) }))
        #expect(outcome.keptRepresentatives == representatives.filter { corpus.receivedAt[$0]! < cutoff && !corpus.active.contains($0) }.count)
        try Self.expectConsistent(f)
    }

    // SQLite-only: SQLite's auto_vacuum modes and VACUUM; PostgreSQL's prune reclaims nothing itself.
    @Test func aDatabaseWithoutIncrementalVacuumIsVacuumedOnceThenIncrementally() throws {
        let f = try StoreFixture(.sqlite)
        defer { f.remove() }
        _ = try Self.buildCorpus(f, count: 60)
        let queue = try DatabaseQueue(path: f.location)
        // As databases made before this change are.
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA auto_vacuum = NONE")
            try db.execute(sql: "VACUUM")
        }
        #expect(try queue.read { try Int.fetchOne($0, sql: "PRAGMA auto_vacuum") } == 0)
        try queue.close()

        let incrementalOnly = try f.store.prune(PruneRequest(receivedBefore: f.clock.now - 80 * 86_400_000, reclaim: .incrementalOnly))
        #expect(incrementalOnly.reportsDeleted > 0)
        #expect(incrementalOnly.vacuum == .none)
        let first = try f.store.prune(PruneRequest(receivedBefore: f.clock.now - 60 * 86_400_000))
        #expect(first.vacuum == .full)
        #expect(first.bytesAfter < first.bytesBefore)
        let second = try f.store.prune(PruneRequest(receivedBefore: f.clock.now - 30 * 86_400_000))
        #expect(second.vacuum == .incremental)
        #expect(try DatabaseQueue(path: f.location).read { try Int.fetchOne($0, sql: "PRAGMA auto_vacuum") } == 2)
        try Self.expectConsistent(f)
    }
}
