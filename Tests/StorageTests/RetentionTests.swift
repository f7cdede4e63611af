import Foundation
import GRDB
import Storage
import ReportModel
import TestSupport
import Testing

/// Compressed results, the migration that converts old rows, and `prune`, checked against
/// the SQLite file with plain SQL.
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

    @Test func resultsAreStoredCompressedWithTheirSize() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let json = Self.resultJSON(1)
        let id = try f.db.submit(f.report(1)).reportId
        let job = try #require(try f.db.claim(leaseMs: 30_000))
        try f.db.complete(jobId: job.jobId, token: job.leaseToken, result: JobResult(symbolicatedJSON: json, status: .unsymbolicated))

        let queue = try DatabaseQueue(path: f.db.path)
        let row = try #require(try queue.read {
            try Row.fetchOne($0, sql: "SELECT typeof(symbolicated) AS t, symbolicated, symbolicated_size FROM results WHERE report_id = ?", arguments: [id])
        })
        let type: String = row["t"], stored: Data = row["symbolicated"], size: Int = row["symbolicated_size"]
        #expect(type == "blob")
        #expect(size == json.count)
        #expect(stored.count * 10 < json.count, "\(stored.count) bytes stored for \(json.count)")
        #expect(try Self.perlInflate(stored) == json)
        #expect(try f.db.result(reportId: id)?.symbolicatedJSON == json)
    }

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

    @Test func aReportWhoseStoredBytesAreUnreadableFailsOnceAndTheNextIsClaimed() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let bad = try f.db.submit(f.report(1)).reportId
        let good = try f.db.submit(f.report(2)).reportId
        let queue = try DatabaseQueue(path: f.db.path)
        try queue.write { try $0.execute(sql: "UPDATE reports SET raw = x'00112233' WHERE id = ?", arguments: [bad]) }
        let claimed = try #require(try f.db.claim(leaseMs: 30_000))
        #expect(claimed.reportId == good)
        let status = try #require(try f.db.jobStatus(reportId: bad))
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

    static func buildCorpus(_ f: Fixture, count: Int = 240) throws -> Corpus {
        var corpus = Corpus()
        var rng = SeededGenerator(seed: 42)
        var reprocessLater: [Int64] = []
        let versions: [String?] = ["1.0", "1.1", "2.0", nil]
        for n in 0..<count {
            f.clock.advance(milliseconds: Int64.random(in: 1...Int64(2 * 86_400_000 * 100 / count), using: &rng))
            let version = versions[Int.random(in: 0..<versions.count, using: &rng)]
            let id = try f.db.submit(
                NewReport(raw: Data("report \(n)".utf8), format: "test", kind: .crash, app: "App", version: version)
            ).reportId
            corpus.ids.append(id)
            corpus.receivedAt[id] = f.clock.now
            let job = try #require(try f.db.claim(leaseMs: 86_400_000 * 365))
            switch n % 23 {
            case 5:
                corpus.active.insert(id)  // left running
                continue
            case 11:
                _ = try f.db.fail(jobId: job.jobId, token: job.leaseToken, failure: .permanent("input error"), policy: RetryPolicy())
                continue
            default: break
            }
            // Skewed: group g holds about 1/2^(g+1) of the reports, so small groups are all old.
            let g = 7 - Int(log2(Double(Int.random(in: 1...255, using: &rng))))
            let missing = n % 4 == 0 ? ["ab0\(n % 3)cd"] : []
            try f.db.complete(
                jobId: job.jobId, token: job.leaseToken,
                result: JobResult(
                    symbolicatedJSON: resultJSON(n), status: missing.isEmpty ? .complete : .partial,
                    group: GroupLedgerTests.group("g\(g)"),
                    missingImages: try missing.map { MissingDebugFile(buildID: try BuildID($0), imageName: "Lib") }))
            if n % 17 == 3 { reprocessLater.append(id) }
        }
        // A few old reports move to another group on reprocessing, as `symbols add` causes.
        for id in corpus.ids.prefix(40) where !corpus.active.contains(id) && id % 5 == 0 {
            _ = try f.db.enqueueReprocessing(reportId: id)
            let job = try #require(try f.db.claim(leaseMs: 60_000))
            #expect(job.reportId == id)
            try f.db.complete(
                jobId: job.jobId, token: job.leaseToken,
                result: JobResult(symbolicatedJSON: resultJSON(Int(id)), status: .complete, group: GroupLedgerTests.group("moved")))
        }
        // Reprocessing queued and never run: these reports must survive a prune.
        for id in reprocessLater {
            _ = try f.db.enqueueReprocessing(reportId: id)
            corpus.active.insert(id)
        }
        return corpus
    }

    /// Every table against the surviving reports, in plain SQL.
    static func expectConsistent(_ f: Fixture, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try GroupLedgerTests.expectLedgerMatchesResults(f, sourceLocation: sourceLocation)
        let queue = try DatabaseQueue(path: f.db.path)
        try queue.read { db in
            for row in try Row.fetchAll(db, sql: "SELECT fingerprint, count, representative_report_id FROM groups") {
                let fingerprint: String = row["fingerprint"]
                let members = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM results WHERE fingerprint = ?", arguments: [fingerprint])
                #expect(row["count"] == members, "\(fingerprint)", sourceLocation: sourceLocation)
                let versionSum = try Int.fetchOne(db, sql: "SELECT SUM(count) FROM group_versions WHERE fingerprint = ?", arguments: [fingerprint])
                #expect(versionSum == members, "\(fingerprint) versions", sourceLocation: sourceLocation)
                let representative: Int64? = row["representative_report_id"]
                let isMember = try Bool.fetchOne(
                    db, sql: "SELECT COUNT(*) > 0 FROM results WHERE report_id = ? AND fingerprint = ?",
                    arguments: [representative, fingerprint])
                #expect(isMember == true, "\(fingerprint) representative \(representative.map(String.init) ?? "nil")", sourceLocation: sourceLocation)
            }
            let orphans = try Int.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM jobs WHERE report_id NOT IN (SELECT id FROM reports))
                         + (SELECT COUNT(*) FROM results WHERE report_id NOT IN (SELECT id FROM reports))
                         + (SELECT COUNT(*) FROM missing_symbols WHERE report_id NOT IN (SELECT id FROM reports))
                         + (SELECT COUNT(*) FROM group_versions WHERE fingerprint NOT IN (SELECT fingerprint FROM groups))
                    """)
            #expect(orphans == 0, sourceLocation: sourceLocation)
        }
    }

    static func surviving(_ f: Fixture) throws -> Set<Int64> {
        try Set(DatabaseQueue(path: f.db.path).read { try Int64.fetchAll($0, sql: "SELECT id FROM reports") })
    }

    @Test(arguments: [1, 7, 500])
    func pruneDeletesOldReportsAndKeepsEveryCountExact(batchSize: Int) throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let corpus = try Self.buildCorpus(f)
        try Self.expectConsistent(f)
        let cutoff = f.clock.now - 30 * 86_400_000
        let expected = Set(corpus.ids.filter { corpus.receivedAt[$0]! >= cutoff || corpus.active.contains($0) })
        #expect(expected.count < corpus.ids.count / 2, "most of the corpus is old")
        let before = try f.db.groups(GroupFilter(limit: 100))
        let groupsBefore = Set(before.map(\.fingerprint))

        let outcome = try f.db.prune(PruneRequest(receivedBefore: cutoff, batchSize: batchSize))
        #expect(try Self.surviving(f) == expected)
        #expect(outcome.reportsDeleted == corpus.ids.count - expected.count)
        #expect(outcome.keptActive == corpus.active.filter { corpus.receivedAt[$0]! < cutoff }.count)
        try Self.expectConsistent(f)
        let after = try f.db.groups(GroupFilter(limit: 100))
        let groupsAfter = Set(after.map(\.fingerprint))
        #expect(outcome.groupsDeleted == groupsBefore.subtracting(groupsAfter).count)
        #expect(outcome.groupsDeleted > 0, "some small groups had only old reports")
        let shrunk = Set(before.filter { g in after.contains { $0.fingerprint == g.fingerprint && $0.count < g.count } }.map(\.fingerprint))
        #expect(outcome.groupsUpdated == shrunk.count)
        #expect(outcome.vacuum == .incremental, "a database this code created has incremental auto-vacuum")
        #expect(outcome.bytesAfter < outcome.bytesBefore)

        // Nothing left to prune: a second pass deletes nothing.
        let again = try f.db.prune(PruneRequest(receivedBefore: cutoff, batchSize: batchSize))
        #expect(again.reportsDeleted == 0 && again.jobsDeleted == 0)
    }

    @Test func keepGroupsKeepsEachGroupsRepresentative() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let corpus = try Self.buildCorpus(f)
        let before = try f.db.groups(GroupFilter(limit: 100))
        let cutoff = f.clock.now - 30 * 86_400_000
        let representatives = Set(before.compactMap(\.representativeReportId))
        let expected = Set(corpus.ids.filter {
            corpus.receivedAt[$0]! >= cutoff || corpus.active.contains($0) || representatives.contains($0)
        })

        let outcome = try f.db.prune(PruneRequest(receivedBefore: cutoff, keepGroups: true, batchSize: 10))
        #expect(try Self.surviving(f) == expected)
        #expect(outcome.groupsDeleted == 0)
        let after = try f.db.groups(GroupFilter(limit: 100))
        #expect(Dictionary(uniqueKeysWithValues: after.map { ($0.fingerprint, $0.representativeReportId) })
            == Dictionary(uniqueKeysWithValues: before.map { ($0.fingerprint, $0.representativeReportId) }))
        #expect(outcome.keptRepresentatives == representatives.filter { corpus.receivedAt[$0]! < cutoff && !corpus.active.contains($0) }.count)
        try Self.expectConsistent(f)
    }

    @Test func aDatabaseWithoutIncrementalVacuumIsVacuumedOnceThenIncrementally() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        _ = try Self.buildCorpus(f, count: 60)
        let queue = try DatabaseQueue(path: f.db.path)
        // As databases made before this change are.
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA auto_vacuum = NONE")
            try db.execute(sql: "VACUUM")
        }
        #expect(try queue.read { try Int.fetchOne($0, sql: "PRAGMA auto_vacuum") } == 0)
        try queue.close()

        let incrementalOnly = try f.db.prune(PruneRequest(receivedBefore: f.clock.now - 80 * 86_400_000, reclaim: .incrementalOnly))
        #expect(incrementalOnly.reportsDeleted > 0)
        #expect(incrementalOnly.vacuum == .none)
        let first = try f.db.prune(PruneRequest(receivedBefore: f.clock.now - 60 * 86_400_000))
        #expect(first.vacuum == .full)
        #expect(first.bytesAfter < first.bytesBefore)
        let second = try f.db.prune(PruneRequest(receivedBefore: f.clock.now - 30 * 86_400_000))
        #expect(second.vacuum == .incremental)
        #expect(try DatabaseQueue(path: f.db.path).read { try Int.fetchOne($0, sql: "PRAGMA auto_vacuum") } == 2)
        try Self.expectConsistent(f)
    }
}
