import Foundation
import GRDB
import Storage
import ReportModel
import TestSupport
import Testing

/// The ingest writer: concurrent submissions share transactions, and each gets exactly the
/// answer a lone `submit` would give; what one report cannot store fails it alone.
@Suite struct GroupCommitTests {
    @Test func concurrentSubmissionsAllLandOnceWithTheirOwnAnswers() async throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let writer = GroupCommit(db: f.db, maxBatch: 16)
        // 300 submissions of 200 distinct reports: every report from 100 to 199 is sent twice.
        let numbers = Array(0..<200) + Array(100..<200)
        let outcomes = try await withThrowingTaskGroup(of: (Int, SubmitOutcome).self) { group in
            for n in numbers.shuffled() {
                let report = f.report(n)
                group.addTask { (n, try await writer.submit(StorableReport(report))) }
            }
            return try await group.reduce(into: [(Int, SubmitOutcome)]()) { $0.append($1) }
        }
        #expect(outcomes.count == 300)
        let byReport = Dictionary(grouping: outcomes, by: \.0)
        for (n, answers) in byReport {
            // One fresh store per distinct report; a second send is a duplicate of the same id.
            #expect(answers.filter { !$0.1.duplicate }.count == 1, "report \(n)")
            #expect(Set(answers.map(\.1.reportId)).count == 1, "report \(n)")
        }
        // Plain SQL: 200 rows, each with one queued job, each holding the bytes it was sent with.
        let queue = try DatabaseQueue(path: f.db.path)
        #expect(try await queue.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM reports") } == 200)
        #expect(try await queue.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM jobs WHERE state = 'queued'") } == 200)
        for (n, answers) in byReport {
            #expect(try f.db.report(id: answers[0].1.reportId)?.raw == f.report(n).raw)
        }
    }

    @Test func aReportTheDatabaseRefusesFailsAloneInItsBatch() async throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        // A trigger makes SQLite itself refuse one report, whatever batch it lands in.
        try await DatabaseQueue(path: f.db.path).write { db in
            try db.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON reports WHEN NEW.format = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned'); END")
        }
        let writer = GroupCommit(db: f.db)
        let results = await withTaskGroup(of: (Int, Bool).self) { group in
            for n in 0..<40 {
                var report = f.report(n)
                if n == 17 { report.format = "poison" }
                let sent = report
                group.addTask { (n, (try? await writer.submit(StorableReport(sent))) != nil) }
            }
            return await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
        }
        #expect(results.filter { !$0.value }.map(\.key) == [17])
        let queue = try DatabaseQueue(path: f.db.path)
        #expect(try await queue.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM reports") } == 39)
    }

    @Test func theSendersGzipIsStoredAsIsAndReadsBack() throws {
        let f = try Fixture()
        defer { f.dir.remove() }
        let raw = Data((0..<5000).map { "line \($0) of a report\n" }.joined().utf8)
        // gzip(1) as the sender: an independent compressor.
        let path = f.dir.file("report.txt")
        try raw.write(to: URL(fileURLWithPath: path))
        #expect(try runProcess("/usr/bin/gzip", ["-n", path]).status == 0)
        let gzip = try Data(contentsOf: URL(fileURLWithPath: path + ".gz"))
        let outcome = try f.db.submit([StorableReport(NewReport(raw: raw, format: "test", kind: .crash), alreadyCompressed: gzip)])[0]
        let queue = try DatabaseQueue(path: f.db.path)
        #expect(try queue.read { try Data.fetchOne($0, sql: "SELECT raw FROM reports WHERE id = ?", arguments: [outcome.reportId]) } == gzip)
        #expect(try f.db.report(id: outcome.reportId)?.raw == raw)
    }
}
