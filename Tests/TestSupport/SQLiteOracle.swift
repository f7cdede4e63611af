import Foundation

/// Plain SQL through the `sqlite3` shell: an oracle that shares no code with ours.
public func sqlite(_ path: String, _ query: String) throws -> [[String: Any]] {
    let out = try runProcess("sqlite3", ["-cmd", ".timeout 10000", "-json", path, query], timeout: 60)
    guard out.succeeded else { throw TestSupportError(out.summary) }
    let text = out.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    guard !text.isEmpty else { return [] }
    return try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] ?? []
}

/// The one integer a query returns.
public func sqliteInt(_ path: String, _ query: String) throws -> Int {
    let rows = try sqlite(path, query)
    guard let value = rows.first?.values.first as? Int else { throw TestSupportError("\(query) → \(rows)") }
    return value
}

/// Plain SQL through `psql` against a PostgreSQL database URL (one of `PostgresCluster`'s):
/// the rows as JSON objects, as `sqlite` gives them (`json_agg` of the query's rows).
public func postgresRows(_ url: String, _ query: String) throws -> [[String: Any]] {
    let out = try runProcess(
        "\(PostgresCluster.binaries)/psql",
        ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", "SELECT COALESCE(json_agg(q), '[]') FROM (\(query)) AS q"],
        timeout: 60)
    guard out.succeeded else { throw TestSupportError(out.summary) }
    let text = out.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    return try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] ?? []
}
