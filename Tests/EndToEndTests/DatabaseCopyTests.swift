import Foundation
import TestSupport
import Testing

/// `stackline db copy` (issue 33 §3): a SQLite installation with real reports, groups, triage,
/// tokens and namespaces, moved into PostgreSQL, answers every query as the file did; the copy
/// refuses to overwrite a database that holds reports unless told to, and ids go on after it.
@Suite(.serialized) struct DatabaseCopyTests {
    @Test func aCopiedInstallationAnswersAsTheFileDidAndGoesOnFromIt() throws {
        let h = try Harness()
        let wild = TestPaths.packageRoot + "/Tests/Fixtures/wild/"
        var inputs: [String] = []
        for folder in ["ips", "kscrash", "metrickit", "android", "apple-crash"] {
            let names = try FileManager.default.contentsOfDirectory(atPath: wild + folder).sorted()
            inputs += names.filter { !$0.hasPrefix(".") && !$0.hasSuffix(".md") && !$0.hasSuffix(".snap") }.map { wild + folder + "/" + $0 }
        }
        // Some of the MetricKit samples hold diagnostics the parser refuses (exit status 1): the
        // rest of each file is stored, and the ids printed are what was.
        let submitted = try h.stackline(["submit"] + inputs)
        let ids = submitted.stdout.split(separator: "\n").compactMap { Int64(String($0.split(separator: "\t").first ?? "")) }
        #expect(ids.count >= 10, "\(ids)")
        #expect(try h.stackline(["master", "--once", "--workers", "2"]).status == 0)
        // Triage, a namespace and tokens, so their tables are not empty.
        let fingerprints = try h.groupFingerprints()
        #expect(fingerprints.count >= 3)
        #expect(try h.stackline(["group", fingerprints[0], "resolve"]).status == 0)
        #expect(try h.stackline(["group", fingerprints[1], "comment", "looked at it"]).status == 0)
        #expect(try h.stackline(["group", fingerprints[2], "merge", fingerprints[1]]).status == 0)
        #expect(try h.stackline(["namespaces", "set-key", "prism"]).status == 0)
        _ = try h.token("read")

        let url = try PostgresCluster.shared.get().makeDatabase()
        try h.copyToPostgres(
            url, tables: ["reports", "jobs", "results", "groups", "group_versions", "group_history", "group_merges", "tokens", "namespaces"])

        // Every answer the same from both: lists, each group, each report, search, facets, releases.
        try h.expectSameAnswer(["groups", "--json"], copy: url)
        try h.expectSameAnswer(["groups", "--json", "--state", "resolved"], copy: url)
        for fingerprint in try h.groupFingerprints() { try h.expectSameAnswer(["group", fingerprint, "--json"], copy: url) }
        try h.expectSameAnswer(["group", fingerprints[1], "history", "--json"], copy: url)
        for id in ids { try h.expectSameAnswer(["report", "\(id)", "--json"], copy: url) }
        try h.expectSameAnswer(["reports", "--json"], copy: url)
        try h.expectSameAnswer(["facets", "app", "--json"], copy: url)
        try h.expectSameAnswer(["releases", "--json"], copy: url)
        try h.expectSameAnswer(["namespaces", "list"], copy: url)
        try h.expectSameAnswer(["tokens", "list"], copy: url)

        // The copy's ledger holds: db check on PostgreSQL recounts it from the reports…
        let checked = try h.stackline(["db", "check", "--db", url])
        #expect(checked.status == 0 && checked.stdout.hasSuffix("ok\n"), "\(checked.stdout) \(checked.stderr)")

        // A second copy over a database that holds reports is refused, and kept as it was…
        let again = try h.stackline(["db", "copy", "--from", h.dbPath, "--to", url])
        #expect(again.status != 0)
        #expect(again.stderr.contains("--replace"), "\(again.stderr)")
        #expect(try Backend.postgres.int(url, "SELECT COUNT(*) FROM reports") == ids.count)
        // …unless asked, which gives the same database again.
        #expect(try h.stackline(["db", "copy", "--from", h.dbPath, "--to", url, "--replace"]).status == 0)
        try h.expectSameAnswer(["groups", "--json"], copy: url)

        // …and names a group whose count was tampered with behind its back.
        let tampered = fingerprints[0]
        _ = try runProcess(
            "\(PostgresCluster.binaries)/psql", ["-X", "-q", "-d", url, "-c", "UPDATE groups SET count = count + 1 WHERE fingerprint = '\(tampered)'"])
        let caught = try h.stackline(["db", "check", "--db", url])
        #expect(caught.status == 1 && caught.stdout.contains("group \(tampered): count"), "\(caught.stdout)")
        _ = try runProcess(
            "\(PostgresCluster.binaries)/psql", ["-X", "-q", "-d", url, "-c", "UPDATE groups SET count = count - 1 WHERE fingerprint = '\(tampered)'"])

        // The copy goes on from where the file was: the next report takes the next id.
        let next = try h.stackline(["submit", "--db", url, inputs[0]])
        #expect(next.status == 0, "\(next.stderr)")
        let firstWord = { (out: ProcessOutput) in Int64(String(out.stdout.split(whereSeparator: { $0 == "\t" || $0 == "\n" }).first ?? "")) }
        let duplicate = try #require(firstWord(next))
        #expect(duplicate == ids[0], "the same bytes are the same report")
        let fresh = h.dir.file("fresh.ips")
        try variant(of: try Data(contentsOf: URL(fileURLWithPath: inputs[0])), number: 7).write(to: URL(fileURLWithPath: fresh))
        let added = try h.stackline(["submit", "--db", url, fresh])
        let addedId = firstWord(added)
        #expect(addedId == ids.max()! + 1, "\(added.stdout) \(added.stderr)")
    }
}
