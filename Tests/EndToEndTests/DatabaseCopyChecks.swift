import Foundation
import TestSupport
import Testing

/// A SQLite installation moved into PostgreSQL with `stackline db copy`, checked the same way by
/// DatabaseCopyTests and by the chaos run's SQLite twin (ChaosTests): the copy's printed counts
/// against each engine's own shell, and the CLI's answers from the file against its copy's.
extension Harness {
    /// `stackline db copy --json` of this harness's SQLite file into the PostgreSQL database
    /// `url`. It must succeed and print every table of `tables` (it may print more); each table
    /// it prints is counted by sqlite3 in the file and by psql in the copy, not by the command.
    func copyToPostgres(_ url: String, tables: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let copy = try stackline(["db", "copy", "--from", "sqlite:" + dbPath, "--to", url, "--json"])
        #expect(copy.status == 0, "\(copy.stderr)", sourceLocation: sourceLocation)
        let printed = try #require(
            try JSONSerialization.jsonObject(with: Data(copy.stdout.utf8)) as? [[String: Any]], sourceLocation: sourceLocation)
        let names = printed.compactMap { $0["table"] as? String }
        #expect(Set(tables).isSubset(of: names), "\(names)", sourceLocation: sourceLocation)
        // One query for every table rather than a shell each, in the SQL both engines accept.
        let query = names.map { "SELECT '\($0)' AS name, COUNT(*) AS n FROM \"\($0)\"" }.joined(separator: " UNION ALL ")
        func counts(_ backend: Backend, _ location: String) throws -> [String: Int] {
            Dictionary(try backend.rows(location, query).map { ($0["name"] as? String ?? "", $0["n"] as? Int ?? -1) }) { a, _ in a }
        }
        let inFile = try counts(.sqlite, dbPath), inCopy = try counts(.postgres, url)
        for table in printed {
            let name = table["table"] as? String ?? ""
            #expect(inFile[name] != nil && table["source"] as? Int == inFile[name], "\(table)", sourceLocation: sourceLocation)
            #expect(table["target"] as? Int == inFile[name], "\(table)", sourceLocation: sourceLocation)
            #expect(inCopy[name] == inFile[name], "\(name): \(String(describing: inCopy[name]))", sourceLocation: sourceLocation)
        }
    }

    /// `stackline ARGUMENTS` run on this harness's SQLite file and on its PostgreSQL copy at
    /// `url`: both succeed and print the same bytes.
    func expectSameAnswer(_ arguments: [String], copy url: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let file = try stackline(arguments + ["--db", dbPath])
        let copied = try stackline(arguments + ["--db", url])
        #expect(file.status == 0 && copied.status == 0, "\(arguments): \(file.stderr) \(copied.stderr)", sourceLocation: sourceLocation)
        #expect(file.stdout == copied.stdout, "\(arguments)", sourceLocation: sourceLocation)
    }

    /// The fingerprints `groups --json ARGUMENTS` lists from this harness's database.
    func groupFingerprints(_ arguments: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let out = try stackline(["groups", "--json", "--limit", "100"] + arguments)
        let groups = try #require(
            try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [[String: Any]], "\(out.stderr)", sourceLocation: sourceLocation)
        return groups.compactMap { $0["fingerprint"] as? String }
    }
}
