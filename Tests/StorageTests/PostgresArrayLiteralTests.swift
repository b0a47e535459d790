import DatabaseTestSupport
import Storage
import Testing

/// Columns bound as one array parameter come back from `unnest` exactly as given.
@Suite("PostgreSQL array literals")
struct PostgresArrayLiteralTests {
    static let texts: [String?] = [
        "plain", "", nil, "NULL", "with \"quotes\"", #"back\slash"#, "comma, {braces} and spaces ",
        "naïve ünïcödé 🚀", "line\nbreak\ttab", #"\""#,
    ]

    @Test("the text form is quoted element by element, with NULL unquoted")
    func textForm() {
        #expect(PostgresArrayLiteral.text(["a", nil, #"b"c\d"#]) == #"{"a",NULL,"b\"c\\d"}"#)
        #expect(PostgresArrayLiteral.text([String?]()) == "{}")
        #expect(PostgresArrayLiteral.integers([1, nil, -9_223_372_036_854_775_808]) == "{1,NULL,-9223372036854775808}")
    }

    @Test("text and bigint arrays round-trip through unnest on PostgreSQL")
    func roundTrip() async throws {
        try await withDatabase(.postgres) { db, _ in
            let rows = try await db.query(
                "SELECT t, n FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS u(t, n, i) ORDER BY i",
                [
                    .text(PostgresArrayLiteral.text(Self.texts)),
                    .text(
                        PostgresArrayLiteral.integers(Self.texts.indices.map { $0 == 2 ? nil : Int64($0) * 1_000_003 })
                    ),
                ]
            )
            #expect(try rows.map { try $0.optionalString("t") } == Self.texts)
            #expect(
                try rows.map { try $0.optionalInt("n") }
                    == Self.texts.indices.map { $0 == 2 ? nil : Int64($0) * 1_000_003 }
            )
        }
    }
}
