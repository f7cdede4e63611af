import Foundation
import GRDB
import Hashing
@testable import Storage
import ReportModel
import TestSupport
import Testing

/// "v9: duplicates within a namespace" on a database made by the v8 schema: the rebuilt
/// `reports` keeps every row, id and reference, the AUTOINCREMENT counter, and from then on
/// the same bytes are one report per namespace. Checked with `sqlite3`, not our queries.
@Suite struct NamespaceDedupMigrationTests {
    @Test func aV8DatabaseKeepsItsReportsAndDeduplicatesPerNamespaceAfterV9() throws {
        let dir = try TempDirectory("dedup-migration")
        defer { dir.remove() }
        let path = dir.file("v8.sqlite")
        let bytes = Data("the same report".utf8)
        let digest = SHA256.hex(bytes)
        do {
            let queue = try DatabaseQueue(path: path)
            try Schema.migrator.migrate(queue, upTo: "v8: alerts")
            try queue.write { db in
                let raw = bytes  // never read back here: no need to compress it as the column holds
                for (id, ns) in [(1, "tenant-a"), (2, nil), (3, "tenant-b")] as [(Int, String?)] {
                    // Under v8 the digest was unique in the whole table: vary it for rows 2 and 3.
                    try db.execute(
                        sql: """
                            INSERT INTO reports (id, raw, raw_size, format, digest, kind, received_at, namespace, build_ids)
                            VALUES (?, ?, ?, 'test', ?, 'crash', 1, ?, '')
                            """, arguments: [id, raw, bytes.count, id == 1 ? digest : "\(digest)-\(id)", ns])
                    try db.execute(
                        sql: "INSERT INTO jobs (report_id, state, priority, run_after, created_at, updated_at) VALUES (?, 'queued', 0, 0, 1, 1)",
                        arguments: [id])
                }
                // The newest report was deleted (retention): its id must never come back.
                try db.execute(sql: "INSERT INTO reports (id, raw, raw_size, format, digest, kind, received_at) VALUES (9, x'', 0, 't', 'gone', 'crash', 1)")
                try db.execute(sql: "DELETE FROM reports WHERE id = 9")
            }
            try queue.close()
        }

        let db = try ServiceDatabase(path: path)
        let kept = try sqlite(path, "SELECT id, ifnull(namespace, '-') AS ns FROM reports ORDER BY id")
        #expect(kept.map { $0["id"] as? Int } == [1, 2, 3] && kept.map { $0["ns"] as? String } == ["tenant-a", "-", "tenant-b"])
        #expect(try sqlite(path, "SELECT report_id FROM jobs ORDER BY report_id").map { $0["report_id"] as? Int } == [1, 2, 3])
        #expect(try sqlite(path, "PRAGMA foreign_key_check").isEmpty)
        #expect(try sqlite(path, "SELECT seq FROM sqlite_sequence WHERE name = 'reports'").first?["seq"] as? Int == 9)

        // Same bytes: a duplicate within tenant-a, a new report in tenant-b and without a namespace.
        func submit(_ namespace: String?) throws -> SubmitOutcome {
            try db.submit(NewReport(raw: bytes, format: "test", kind: .crash, app: nil, version: nil, namespace: namespace))
        }
        let again = try submit("tenant-a")
        #expect(again.duplicate && again.reportId == 1)
        let b = try submit("tenant-b"), none = try submit(nil)
        #expect(!b.duplicate && !none.duplicate && b.reportId == 10 && none.reportId == 11, "ids after the deleted 9: \(b), \(none)")
        #expect(try submit(nil) == SubmitOutcome(reportId: 11, jobId: nil, duplicate: true))
        // The index refuses a second row of one (digest, namespace), NULL namespace included.
        let insert = "INSERT INTO reports (raw, raw_size, format, digest, kind, received_at, namespace) VALUES (x'', 0, 't', '\(digest)', 'crash', 1, "
        #expect(!(try runProcess("sqlite3", [path, insert + "NULL)"])).succeeded)
        #expect(!(try runProcess("sqlite3", [path, insert + "'tenant-b')"])).succeeded)
    }
}

/// Plain SQL through the `sqlite3` shell.
private func sqlite(_ path: String, _ query: String) throws -> [[String: Any]] {
    let out = try runProcess("sqlite3", ["-cmd", ".timeout 10000", "-json", path, query], timeout: 60)
    guard out.succeeded else { throw TestSupportError(out.summary) }
    let text = out.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    guard !text.isEmpty else { return [] }
    return try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] ?? []
}
