import Foundation
import Storage
import ReportModel
import TestSupport
import Testing

/// On-disk size of a database: the main file plus its WAL.
func databaseFileBytes(_ path: String) -> Int {
    [path, path + "-wal"].reduce(0) { total, file in
        total + ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0)
    }
}

/// `stackline prune` and `stackline master --retain` on real SQLite files, checked with `sqlite3`.
@Suite(.serialized) struct RetentionEndToEndTests {
    static let day: Int64 = 86_400_000

    /// What the corpus was built from: the oracle for which reports survive.
    struct Corpus {
        var receivedAt: [Int64: Int64] = [:]
        var queued: Set<Int64> = []
    }

    /// 180 processed reports over 120 days in 6 groups of uneven size (one of only old reports), with versions and missing
    /// debug files, plus 4 old reports still queued. Nothing lies within a day of 30 days ago,
    /// so the clock moving while the test runs cannot change what a 30-day prune deletes.
    static func buildCorpus(_ h: Harness) throws -> Corpus {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let clock = Locked<Int64>(0)
        let db = try ServiceDatabase(path: h.dbPath, clock: { clock.value })
        var corpus = Corpus()
        let versions = ["3.1", "3.2", nil]
        for n in 0..<184 {
            var age = Int64(n * 677 % 120) * day + Int64(n) * 1000
            if (29 * day...31 * day).contains(age) { age += 2 * day }
            clock.mutate { $0 = now - age }
            let id = try db.submit(
                NewReport(raw: Data("e2e report \(n)".utf8), format: "test", kind: .crash, app: "E2E", version: versions[n % 3])
            ).reportId
            corpus.receivedAt[id] = now - age
            if n >= 180 {
                corpus.queued.insert(id)
                continue
            }
            let job = try #require(try db.claim(leaseMs: 60_000))
            // Group k gets about twice as many reports as group k+1.
            let k = age > 90 * day && n % 7 == 0 ? 5 : [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 4][n % 16]
            let frames = (0..<120).map { #"{"address":"0x\#(String(0x7f00_0000_0000 + n * 4099 + $0 * 36, radix: 16))","status":"missingDebugFile"}"# }
            let missing = n % 5 == 0 ? ["feed0\(n % 4)"] : []
            try db.complete(
                jobId: job.jobId, token: job.leaseToken,
                result: JobResult(
                    symbolicatedJSON: Data(#"{"frames":[\#(frames.joined(separator: ","))]}"#.utf8),
                    status: missing.isEmpty ? .complete : .partial,
                    group: GroupKey(fingerprint: "group\(k)", kind: .crash, title: "crash \(k)", rulesVersion: 1, frames: ["E2E!f\(k)"]),
                    missingImages: try missing.map { MissingDebugFile(buildID: try BuildID($0), imageName: "libfeed.so") }))
        }
        return corpus
    }

    /// Each invariant of the ledger, in plain SQL against the file.
    static func expectLedgerExact(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let groups = try sqlite(path, "SELECT fingerprint, count, first_seen, last_seen, representative_report_id FROM groups")
        for g in groups {
            let fingerprint = try #require(g["fingerprint"] as? String)
            let members = try sqliteInt(path, "SELECT COUNT(*) FROM results WHERE fingerprint = '\(fingerprint)'")
            #expect(g["count"] as? Int == members, "\(fingerprint) count", sourceLocation: sourceLocation)
            let versions = try sqliteInt(path, "SELECT COALESCE(SUM(count), 0) FROM group_versions WHERE fingerprint = '\(fingerprint)'")
            #expect(versions == members, "\(fingerprint) group_versions", sourceLocation: sourceLocation)
            let seen = try sqlite(path, """
                SELECT MIN(r.received_at) AS first, MAX(r.received_at) AS last FROM results s JOIN reports r ON r.id = s.report_id
                WHERE s.fingerprint = '\(fingerprint)'
                """)
            #expect(g["first_seen"] as? Int == seen.first?["first"] as? Int, "\(fingerprint) first seen", sourceLocation: sourceLocation)
            #expect(g["last_seen"] as? Int == seen.first?["last"] as? Int, "\(fingerprint) last seen", sourceLocation: sourceLocation)
            let representative = try #require(g["representative_report_id"] as? Int)
            #expect(try sqliteInt(path, "SELECT COUNT(*) FROM results WHERE report_id = \(representative) AND fingerprint = '\(fingerprint)'") == 1,
                    "\(fingerprint) representative is a member", sourceLocation: sourceLocation)
        }
        let ungrouped = try sqliteInt(path, "SELECT COUNT(DISTINCT fingerprint) FROM results WHERE fingerprint NOT IN (SELECT fingerprint FROM groups)")
        #expect(ungrouped == 0, "every fingerprint has its group", sourceLocation: sourceLocation)
        for table in ["jobs", "results", "missing_symbols"] {
            #expect(try sqliteInt(path, "SELECT COUNT(*) FROM \(table) WHERE report_id NOT IN (SELECT id FROM reports)") == 0,
                    "\(table) rows of deleted reports", sourceLocation: sourceLocation)
        }
        #expect(try sqliteInt(path, "SELECT COUNT(*) FROM group_versions WHERE fingerprint NOT IN (SELECT fingerprint FROM groups)") == 0,
                sourceLocation: sourceLocation)
    }

    static func reportIds(_ path: String) throws -> Set<Int64> {
        Set(try sqlite(path, "SELECT id FROM reports").compactMap { ($0["id"] as? Int).map(Int64.init) })
    }

    @Test func pruneDeletesOldReportsKeepsTheLedgerExactAndShrinksTheFile() throws {
        let h = try Harness()
        let corpus = try Self.buildCorpus(h)
        try Self.expectLedgerExact(h.dbPath)
        let cutoff = Int64(Date().timeIntervalSince1970 * 1000) - 30 * Self.day
        let expected = Set(corpus.receivedAt.keys.filter { corpus.receivedAt[$0]! >= cutoff || corpus.queued.contains($0) })
        let groupsBefore = Set(try sqlite(h.dbPath, "SELECT fingerprint FROM groups").compactMap { $0["fingerprint"] as? String })
        let jobsBefore = try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs")
        let pagesBefore = try sqliteInt(h.dbPath, "PRAGMA page_count")
        let fileBefore = databaseFileBytes(h.dbPath)

        let out = try h.stackline(["prune", "--older-than", "30d"])
        #expect(out.succeeded, "\(out.summary)")
        #expect(try Self.reportIds(h.dbPath) == expected)
        try Self.expectLedgerExact(h.dbPath)
        let groupsAfter = Set(try sqlite(h.dbPath, "SELECT fingerprint FROM groups").compactMap { $0["fingerprint"] as? String })
        #expect(groupsAfter.isSubset(of: groupsBefore) && groupsAfter.count < groupsBefore.count, "a group with only old reports is gone")
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs WHERE state = 'queued'") == corpus.queued.count)

        // What it says it deleted is what left the file.
        let deleted = corpus.receivedAt.count - expected.count
        #expect(out.stdout.contains("  reports\t\(deleted)\n"), "\(out.stdout)")
        #expect(out.stdout.contains("  jobs\t\(jobsBefore - (try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM jobs")))\n"), "\(out.stdout)")
        #expect(out.stdout.contains("groups emptied and deleted\t\(groupsBefore.count - groupsAfter.count)\n"), "\(out.stdout)")
        let oldQueued = corpus.queued.filter { corpus.receivedAt[$0]! < cutoff }.count
        #expect(oldQueued > 0)
        #expect(out.stdout.contains("kept (job queued or running)\t\(oldQueued)\n"), "\(out.stdout)")
        #expect(out.stdout.contains("reclaimed by incremental vacuum"), "\(out.stdout)")

        let pagesAfter = try sqliteInt(h.dbPath, "PRAGMA page_count")
        let fileAfter = databaseFileBytes(h.dbPath)
        // Pages holding data, not the empty schema's (which grows with each migration).
        let empty = try Harness()
        _ = try empty.database()
        let schemaPages = try sqliteInt(empty.dbPath, "PRAGMA page_count")
        #expect(pagesAfter - schemaPages < (pagesBefore - schemaPages) * 2 / 3, "pages \(pagesBefore) → \(pagesAfter), \(schemaPages) for the schema")
        // The file too, less the schema's pages (each migration adds some: v7 added `workers`).
        let schemaBytes = schemaPages * (try sqliteInt(empty.dbPath, "PRAGMA page_size"))
        #expect(fileAfter - schemaBytes < (fileBefore - schemaBytes) * 2 / 3, "file \(fileBefore) → \(fileAfter) bytes, \(schemaBytes) for the schema")
    }

    @Test func pruneKeepGroupsKeepsEveryGroupAndItsRepresentative() throws {
        let h = try Harness()
        let corpus = try Self.buildCorpus(h)
        let before = try sqlite(h.dbPath, "SELECT fingerprint, representative_report_id AS r FROM groups")
        let representatives = Dictionary(uniqueKeysWithValues: before.map { ($0["fingerprint"] as! String, $0["r"] as! Int) })
        let cutoff = Int64(Date().timeIntervalSince1970 * 1000) - 30 * Self.day
        let expected = Set(corpus.receivedAt.keys.filter {
            corpus.receivedAt[$0]! >= cutoff || corpus.queued.contains($0) || representatives.values.contains(Int($0))
        })
        #expect(representatives.values.contains { corpus.receivedAt[Int64($0)]! < cutoff }, "some representative is old")

        let out = try h.stackline(["prune", "--older-than", "30d", "--keep-groups", "--json"])
        #expect(out.succeeded, "\(out.summary)")
        #expect(try Self.reportIds(h.dbPath) == expected)
        let after = try sqlite(h.dbPath, "SELECT fingerprint, representative_report_id AS r FROM groups")
        #expect(Dictionary(uniqueKeysWithValues: after.map { ($0["fingerprint"] as! String, $0["r"] as! Int) }) == representatives)
        try Self.expectLedgerExact(h.dbPath)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any])
        #expect(json["reportsDeleted"] as? Int == corpus.receivedAt.count - expected.count)
        #expect(json["groupsDeleted"] as? Int == 0)
    }

    @Test func pruneRefusesAMissingDatabaseAndABadDuration() throws {
        let h = try Harness()
        let missing = try h.stackline(["prune", "--older-than", "30d", "--db", h.dir.file("nowhere.sqlite")])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no database at"))
        #expect(!FileManager.default.fileExists(atPath: h.dir.file("nowhere.sqlite")), "prune created no database")
        for bad in ["thirty", "30y", "99999999999999999d"] {
            let out = try h.stackline(["prune", "--older-than", bad])
            #expect(out.status == 64 && !out.signaled, "\(bad): \(out.summary)")
            #expect(out.stderr.contains("older-than"), "\(bad): \(out.stderr)")
        }
    }

    @Test func masterRetainPrunesReportsOnceTheirJobsAreDone() throws {
        let h = try Harness()
        let base = try CrashFixture.shared.report(symbolicate: "off")
        let ids = try h.submit(try h.write((0..<5).map { variant(of: base, number: $0) }))
        let old = Array(ids.prefix(3))
        // Received 40 days ago: too old for --retain 30d, but queued, so kept until done.
        let fortyDaysAgo = Int64(Date().timeIntervalSince1970 * 1000) - 40 * Self.day
        _ = try sqlite(h.dbPath, "UPDATE reports SET received_at = \(fortyDaysAgo) WHERE id IN (\(old.map(String.init).joined(separator: ",")))")

        let master = try h.startMaster(["--workers", "1", "--retain", "30d", "--retain-interval", "1", "--lease", "2"])
        try h.waitUntil("the old reports to be processed and pruned") { try Self.reportIds(h.dbPath) == Set(ids.dropFirst(3)) }
        try h.waitUntil("the new reports to be done") { try h.database().stateCounts()[.done] == 2 }
        master.signal(SIGTERM)
        #expect(try master.waitForExit() == 0)
        #expect(master.log.contains("retention: pruned reports older than 30d"))
        try Self.expectLedgerExact(h.dbPath)
        #expect(try sqliteInt(h.dbPath, "SELECT COUNT(*) FROM results") == 2)

        let bad = try h.stackline(["master", "--retain", "2026-01-01", "--once"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--retain takes a duration"))
    }
}
