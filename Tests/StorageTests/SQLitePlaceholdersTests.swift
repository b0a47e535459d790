import Testing

@testable import Storage

/// `$n` becomes `?n` where SQLite's tokenizer would read a placeholder, and nowhere else.
@Suite("SQLite placeholder spelling")
struct SQLitePlaceholdersTests {
    @Test(
        "placeholders are renumbered; literals, quoted names, comments and identifiers are not",
        arguments: [
            ("SELECT $1", "SELECT ?1"),
            ("VALUES ($1, $2), ($3, $12)", "VALUES (?1, ?2), (?3, ?12)"),
            ("WHERE a = $2 OR b = $1", "WHERE a = ?2 OR b = ?1"),
            ("SELECT '$1', 'it''s $2', $3", "SELECT '$1', 'it''s $2', ?3"),
            (#"SELECT "$1", "a""$2", `$3`, [$4], $5"#, #"SELECT "$1", "a""$2", `$3`, [$4], ?5"#),
            ("SELECT $1 -- $2\n, $3", "SELECT ?1 -- $2\n, ?3"),
            ("SELECT /* $1 * / $2 */ $3", "SELECT /* $1 * / $2 */ ?3"),
            ("SELECT a$1, _$2, é$3 FROM t", "SELECT a$1, _$2, é$3 FROM t"),
            ("SELECT $name, $, $$1", "SELECT $name, $, $$1"),
            ("SELECT 'unterminated $1", "SELECT 'unterminated $1"),
            ("SELECT 1 /* unterminated $1", "SELECT 1 /* unterminated $1"),
            ("SELECT $1 -- no newline $2", "SELECT ?1 -- no newline $2"),
            ("", ""),
        ]
    )
    func rewrites(input: String, expected: String) {
        #expect(SQLitePlaceholders.numbered(input) == expected)
    }
}
