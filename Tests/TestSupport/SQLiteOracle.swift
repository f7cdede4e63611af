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
