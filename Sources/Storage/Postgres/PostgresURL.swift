import Foundation

/// A `--db` value or `STACKLINE_DB` that names a PostgreSQL database rather than a SQLite file.
public enum PostgresURL {
    /// `postgres://…` or `postgresql://…` (libpq's two URI schemes); anything else is a path.
    public static func isPostgres(_ location: String) -> Bool {
        let lower = location.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    /// `location` with any password in its user part replaced, for messages and logs.
    public static func redacted(_ location: String) -> String {
        guard isPostgres(location), var parts = URLComponents(string: location), parts.password != nil else { return location }
        parts.password = "[password]"
        return parts.string ?? location
    }

    /// Whether the URL carries a password itself: refused on a command line, where every user of
    /// the machine can read it (`ps`); the password comes from the environment or a file.
    public static func hasPassword(_ location: String) -> Bool {
        isPostgres(location) && URLComponents(string: location)?.password != nil
    }
}
