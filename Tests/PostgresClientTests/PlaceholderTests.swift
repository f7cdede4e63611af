@testable import PostgresClient
import Testing

/// `?` → `$n` without a server: what PostgreSQL's lexer treats as text stays text.
@Suite struct PlaceholderTests {
    @Test func placeholdersAreNumberedInOrder() {
        #expect(numberPlaceholders("SELECT 1").text == "SELECT 1")
        #expect(numberPlaceholders("SELECT 1").count == 0)
        let (text, count) = numberPlaceholders("UPDATE t SET a = ?, b = ? WHERE id IN (?, ?, ?, ?, ?, ?, ?, ?, ?)")
        #expect(text == "UPDATE t SET a = $1, b = $2 WHERE id IN ($3, $4, $5, $6, $7, $8, $9, $10, $11)")
        #expect(count == 11)
    }

    @Test func literalsIdentifiersAndCommentsKeepTheirQuestionMarks() {
        let cases: [(sql: String, numbered: String, count: Int)] = [
            ("SELECT '?' , ?", "SELECT '?' , $1", 1),
            ("SELECT 'it''s ?', ?", "SELECT 'it''s ?', $1", 1),
            (#"SELECT "a?""b", ?"#, #"SELECT "a?""b", $1"#, 1),
            ("SELECT ? -- why? because\n, ?", "SELECT $1 -- why? because\n, $2", 2),
            ("SELECT /* ? /* ? */ ? */ ?", "SELECT /* ? /* ? */ ? */ $1", 1),
            (#"SELECT E'\'?', ?"#, #"SELECT E'\'?', $1"#, 1),
            // Outside an E'' string a backslash is an ordinary character, so the quote after it ends the string.
            (#"SELECT '\', ?"#, #"SELECT '\', $1"#, 1),
            ("SELECT $$ ? $$, $tag$ ?$$? $tag$, ?", "SELECT $$ ? $$, $tag$ ?$$? $tag$, $1", 1),
            ("SELECT a$b, ?", "SELECT a$b, $1", 1),
            ("SELECT 'Grüße ?', ?", "SELECT 'Grüße ?', $1", 1),
            // An unterminated literal swallows the rest, as the server's lexer would, which then refuses it.
            ("SELECT '?, ?", "SELECT '?, ?", 0),
        ]
        for c in cases {
            let (text, count) = numberPlaceholders(c.sql)
            #expect(text == c.numbered, "\(c.sql)")
            #expect(count == c.count, "\(c.sql)")
        }
    }
}
