import DatabaseTestSupport
import Foundation
import HeraldCore
import Storage
import Testing

/// The contract every ``Database`` driver keeps, run against SQLite (memory and file) and a real
/// PostgreSQL.
@Suite("Database conformance")
struct DatabaseConformanceTests {
    /// A table with one column of each storage class, in the backend's dialect.
    static func createValuesTable(_ db: any DatabaseExecutor) async throws {
        switch db.dialect {
        case .sqlite:
            try await db.execute(
                "CREATE TABLE vals (id INTEGER PRIMARY KEY, i INTEGER, r REAL, s TEXT, b BLOB, f BOOLEAN, t BIGINT)",
                []
            )
        case .postgres:
            try await db.execute(
                """
                CREATE TABLE vals (id BIGINT PRIMARY KEY, i BIGINT, r DOUBLE PRECISION, s TEXT, b BYTEA,
                    f BOOLEAN, t BIGINT)
                """,
                []
            )
        }
    }

    static func createItemsTable(_ db: any DatabaseExecutor) async throws {
        try await db.execute(
            "CREATE TABLE items (name TEXT PRIMARY KEY, qty BIGINT NOT NULL, note TEXT)",
            []
        )
    }

    @Test("values of every type round-trip", arguments: Backend.allCases)
    func typesRoundTrip(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Self.createValuesTable(db)
            let allBytes = (0...255).map { UInt8($0) }
            let unicode = "héllo wörld 🌍 日本語 ‘’ “”"
            let tricky = "it's \"quoted\" \\ back\\slash; DROP TABLE vals; --"
            let rows: [[SQLValue]] = [
                [1, .integer(.min), .real(-.greatestFiniteMagnitude), "", .blob([]), .bool(false), 0],
                [2, .integer(.max), .real(.leastNonzeroMagnitude), .text(unicode), .blob([0, 0, 0]), true, 1],
                [3, 0, 0.1, .text(tricky), .blob([0, 1, 0, 255, 0]), false, -1],
                [4, -1, .real(.infinity), "line\nbreak\ttab\r\n", .blob(allBytes), true, 1_700_000_000_123],
                [5, 42, .real(-.infinity), "$1 $2 ? :name", .blob([255]), nil, nil],
                [6, nil, nil, nil, nil, nil, nil],
                [7, 1, 3.141592653589793, "🧑‍🚀", .blob(Array(repeating: 0, count: 1000)), true, .integer(.max)],
            ]
            for values in rows {
                let changed = try await db.execute(
                    "INSERT INTO vals (id, i, r, s, b, f, t) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                    values
                )
                #expect(changed == 1)
            }
            let read = try await db.query("SELECT id, i, r, s, b, f, t FROM vals ORDER BY id", [])
            #expect(read.count == rows.count)
            for (row, expected) in zip(read, rows) {
                #expect(row.columns == ["id", "i", "r", "s", "b", "f", "t"])
                #expect(row.values == expected, "row \(expected[0])")
            }
            // Typed accessors and conveniences.
            let second = try #require(read.first { $0["id"] == 2 })
            #expect(try second.int("i") == .max)
            #expect(try second.double("r") == .leastNonzeroMagnitude)
            #expect(try second.string("s") == unicode)
            #expect(try second.bytes("b") == [0, 0, 0])
            #expect(try second.bool("f"))
            #expect(try second.date("t") == Date(timeIntervalSince1970: 0.001))
            let sixth = try #require(read.first { $0["id"] == 6 })
            #expect(try sixth.optionalInt("i") == nil)
            #expect(try sixth.optionalString("s") == nil)
            #expect(try sixth.optionalBytes("b") == nil)
            #expect(try sixth.optionalBool("f") == nil)
            #expect(try sixth.optionalDate("t") == nil)
            #expect(sixth["no_such_column"] == .null)
        }
    }

    @Test("dates, UUIDs and booleans use Herald's conventions", arguments: Backend.allCases)
    func conveniences(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Self.createValuesTable(db)
            let date = Date(timeIntervalSince1970: 1_700_000_000.123)
            let uuid = UUID()
            try await db.execute(
                "INSERT INTO vals (id, s, f, t) VALUES ($1, $2, $3, $4)",
                [1, SQLValue(uuid), .bool(true), SQLValue(date)]
            )
            let row = try #require(try await db.queryFirst("SELECT s, f, t FROM vals WHERE id = $1", [1]))
            #expect(try row.uuid("s") == uuid)
            #expect(try row.string("s") == uuid.uuidString.lowercased())
            #expect(try row.bool("f") == true)
            #expect(try row.date("t") == date)
            #expect(try row.int("t") == 1_700_000_000_123)
            // Booleans compare with 0/1 binds in both dialects.
            let count = try await db.query("SELECT count(*) AS n FROM vals WHERE f = $1", [.bool(true)])
            #expect(try count[0].int("n") == 1)
        }
    }

    @Test("placeholders bind by number, in any order", arguments: Backend.allCases)
    func parameterOrder(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Self.createItemsTable(db)
            try await db.execute("INSERT INTO items (qty, name) VALUES ($2, $1)", ["apple", 3])
            try await db.execute("INSERT INTO items (note, qty, name) VALUES ($3, $1, $2)", [7, "pear", "ripe"])
            let rows = try await db.query(
                "SELECT name, qty, note FROM items WHERE qty >= $2 AND name <> $1 ORDER BY name",
                ["banana", 1]
            )
            #expect(rows.count == 2)
            #expect(try rows[0].string("name") == "apple")
            #expect(try rows[0].int("qty") == 3)
            #expect(try rows[0].optionalString("note") == nil)
            #expect(try rows[1].string("name") == "pear")
            #expect(try rows[1].string("note") == "ripe")
            // A placeholder used twice takes one value.
            let same = try await db.query("SELECT name FROM items WHERE name = $1 OR note = $1", ["ripe"])
            #expect(try same.map { try $0.string("name") } == ["pear"])
            // Casting a placeholder portably.
            let doubled = try await db.query("SELECT CAST($1 AS BIGINT) * 2 AS v", [21])
            #expect(try doubled[0].int("v") == 42)
        }
    }

    @Test(
        "a $n in a string literal, a quoted name or a comment is text, not a placeholder",
        arguments: Backend.allCases
    )
    func placeholdersInLiterals(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            let rows = try await db.query(
                """
                SELECT '$1' AS literal, 'it''s $2' AS escaped, $1 AS bound, "$3" AS quoted -- $4 in a comment
                FROM (SELECT 7 AS "$3") AS t /* and $5 in a block comment */
                """,
                ["value"]
            )
            #expect(try rows[0].string("literal") == "$1")
            #expect(try rows[0].string("escaped") == "it's $2")
            #expect(try rows[0].string("bound") == "value")
            #expect(try rows[0].int("quoted") == 7)
        }
    }

    @Test("a statement of thousands of placeholders binds each to its own number", arguments: Backend.allCases)
    func manyPlaceholders(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Self.createItemsTable(db)
            let rows = 1_500
            let values = (0..<rows).map { "($\($0 * 2 + 1), $\($0 * 2 + 2))" }.joined(separator: ", ")
            let binds: [SQLValue] = (0..<rows).flatMap { row -> [SQLValue] in
                [.text("item-\(row)"), .integer(Int64(row))]
            }
            #expect(try await db.execute("INSERT INTO items (name, qty) VALUES \(values)", binds) == rows)
            let check = try await db.query(
                "SELECT count(*) AS n FROM items WHERE name = 'item-' || CAST(qty AS TEXT)",
                []
            )
            #expect(try check[0].int("n") == rows)
            // A gap in the numbering is refused on both dialects, as is a bind for a number not used.
            let gap = await expectDatabaseError {
                _ = try await db.query("SELECT CAST($1 AS BIGINT) + CAST($3 AS BIGINT) AS v", [1, 2, 3])
            }
            #expect(gap?.code == .queryFailed)
        }
    }

    @Test("a wrong number of binds is an error that names the problem", arguments: Backend.allCases)
    func bindCountMismatch(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Self.createItemsTable(db)
            let tooFew = await expectDatabaseError {
                try await db.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["a"])
            }
            #expect(tooFew?.code == .queryFailed)
            let tooMany = await expectDatabaseError {
                try await db.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["a", 1, 2])
            }
            #expect(tooMany?.code == .queryFailed)
            // The database is still usable.
            #expect(try await db.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["a", 1]) == 1)
        }
    }

    @Test("execute returns the number of rows changed", arguments: Backend.allCases)
    func rowsAffected(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Self.createItemsTable(db)
            #expect(
                try await db.execute(
                    "INSERT INTO items (name, qty) VALUES ($1, 1), ($2, 2), ($3, 3)",
                    ["a", "b", "c"]
                ) == 3
            )
            #expect(try await db.execute("UPDATE items SET qty = qty + 10 WHERE qty >= $1", [2]) == 2)
            #expect(try await db.execute("UPDATE items SET qty = 0 WHERE name = $1", ["missing"]) == 0)
            #expect(try await db.execute("SELECT * FROM items", []) == 0)
            #expect(try await db.execute("CREATE TABLE other (x BIGINT)", []) == 0)
            let returned = try await db.query("DELETE FROM items WHERE qty > $1 RETURNING name", [10])
            #expect(Set(try returned.map { try $0.string("name") }) == ["b", "c"])
            #expect(try await db.execute("DELETE FROM items", []) == 1)
        }
    }

    @Test("a transaction commits when its body returns", arguments: Backend.allCases)
    func transactionCommit(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Self.createItemsTable(db)
            let total = try await db.transaction { tx in
                try await tx.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["a", 1])
                try await tx.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["b", 2])
                // The transaction sees its own writes.
                return try await tx.query("SELECT sum(qty) AS total FROM items", [])[0].int("total")
            }
            #expect(total == 3)
            let rows = try await db.query("SELECT name FROM items ORDER BY name", [])
            #expect(try rows.map { try $0.string("name") } == ["a", "b"])
        }
    }

    struct Abort: Error {}

    @Test(
        "a transaction that runs no statement, or runs its statements at once, leaves the database usable",
        arguments: Backend.allCases
    )
    func transactionShapes(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Self.createItemsTable(db)
            // No statement: nothing to commit or roll back (SQLite begins with the first one).
            #expect(try await db.transaction { _ in 7 } == 7)
            await #expect(throws: Abort.self) {
                try await db.transaction { _ -> Int in throw Abort() }
            }
            // Statements the body starts together still run in one transaction, begun once.
            let changed = try await db.transaction { tx in
                async let first = tx.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["x", 1])
                async let second = tx.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["y", 2])
                return try await first + second
            }
            #expect(changed == 2)
            await #expect(throws: Abort.self) {
                try await db.transaction { tx in
                    async let first = tx.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["lost1", 1])
                    async let second = tx.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["lost2", 2])
                    _ = try await (first, second)
                    throw Abort()
                }
            }
            let rows = try await db.query("SELECT name FROM items ORDER BY name", [])
            #expect(try rows.map { try $0.string("name") } == ["x", "y"])
        }
    }

    @Test("a transaction rolls back when its body throws", arguments: Backend.allCases)
    func transactionRollback(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Self.createItemsTable(db)
            try await db.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["kept", 1])
            await #expect(throws: Abort.self) {
                try await db.transaction { tx in
                    try await tx.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["lost", 2])
                    try await tx.execute("UPDATE items SET qty = 99 WHERE name = $1", ["kept"])
                    throw Abort()
                }
            }
            let rows = try await db.query("SELECT name, qty FROM items", [])
            #expect(rows.count == 1)
            #expect(try rows[0].string("name") == "kept")
            #expect(try rows[0].int("qty") == 1)
            // A failing statement inside the transaction rolls it back too.
            let error = await expectDatabaseError {
                try await db.transaction { tx in
                    try await tx.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["lost", 2])
                    try await tx.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["kept", 3])
                }
            }
            #expect(error?.isUniqueViolation == true)
            #expect(try await db.query("SELECT count(*) AS n FROM items", [])[0].int("n") == 1)
            // The connection is healthy afterwards.
            try await db.transaction { tx in
                try await tx.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["after", 3])
            }
            #expect(try await db.query("SELECT count(*) AS n FROM items", [])[0].int("n") == 2)
        }
    }

    @Test(
        "using the database inside its own transaction, or a transaction after it ended, is refused",
        arguments: Backend.allCases
    )
    func transactionMisuse(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Self.createItemsTable(db)
            let reentered = await expectDatabaseError {
                try await db.transaction { _ in
                    _ = try await db.query("SELECT 1 AS one", [])
                }
            }
            #expect(reentered?.code == .transactionMisuse)
            let escaped = try await db.transaction { tx in tx }
            let late = await expectDatabaseError {
                try await escaped.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["late", 1])
            }
            #expect(late?.code == .transactionMisuse)
            #expect(try await db.query("SELECT count(*) AS n FROM items", [])[0].int("n") == 0)
        }
    }

    @Test("a unique violation is reported distinctly, with SQLSTATE 23505", arguments: Backend.allCases)
    func uniqueViolation(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await Self.createItemsTable(db)
            try await db.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["a", 1])
            let duplicate = await expectDatabaseError {
                try await db.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["a", 2])
            }
            #expect(duplicate?.code == .uniqueViolation)
            #expect(duplicate?.isUniqueViolation == true)
            #expect(duplicate?.sqlState == "23505")
            #expect(duplicate?.sql?.contains("INSERT INTO items") == true)
            // Another constraint is a different code.
            let notNull = await expectDatabaseError {
                try await db.execute("INSERT INTO items (name, qty) VALUES ($1, $2)", ["b", nil])
            }
            #expect(notNull?.code == .constraintViolation)
            #expect(notNull?.sqlState == "23502")
            #expect(notNull?.isUniqueViolation == false)
            // Foreign keys are enforced in both dialects.
            try await db.execute(
                "CREATE TABLE parts (id BIGINT PRIMARY KEY, item TEXT NOT NULL REFERENCES items (name))",
                []
            )
            let orphan = await expectDatabaseError {
                try await db.execute("INSERT INTO parts (id, item) VALUES ($1, $2)", [1, "missing"])
            }
            #expect(orphan?.code == .constraintViolation)
            #expect(orphan?.sqlState == "23503")
            // A syntax error is a plain query failure with the server's message.
            let syntax = await expectDatabaseError { _ = try await db.query("SELEC 1", []) }
            #expect(syntax?.code == .queryFailed)
            #expect(syntax?.description.contains("syntax error") == true)
            let missing = await expectDatabaseError { _ = try await db.query("SELECT * FROM nowhere", []) }
            #expect(missing?.code == .queryFailed)
            #expect(try await db.query("SELECT count(*) AS n FROM items", [])[0].int("n") == 1)
        }
    }

    @Test("many concurrent statements and transactions give correct results", arguments: Backend.allCases)
    func concurrency(backend: Backend) async throws {
        try await withDatabase(backend, poolSize: 4) { db, _ in
            try await Self.createItemsTable(db)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<200 {
                    group.addTask {
                        let rows = try await db.query(
                            "SELECT CAST($1 AS BIGINT) * 2 AS v, $2 AS tag",
                            [
                                .integer(Int64(index)), .text("task-\(index)"),
                            ]
                        )
                        #expect(rows.count == 1)
                        #expect(try rows[0].int("v") == Int64(index) * 2)
                        #expect(try rows[0].string("tag") == "task-\(index)")
                    }
                }
                for index in 0..<20 {
                    group.addTask {
                        try await db.transaction { tx in
                            for item in 0..<5 {
                                try await tx.execute(
                                    "INSERT INTO items (name, qty) VALUES ($1, $2)",
                                    [.text("t\(index)-\(item)"), .integer(Int64(item))]
                                )
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let summary = try await db.query("SELECT count(*) AS n, sum(qty) AS total FROM items", [])
            #expect(try summary[0].int("n") == 100)
            #expect(try summary[0].int("total") == 20 * (0 + 1 + 2 + 3 + 4))
        }
    }

    @Test("several statements run as a script", arguments: Backend.allCases)
    func script(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            try await db.executeScript(
                """
                CREATE TABLE a (x BIGINT);
                -- a comment between statements
                CREATE TABLE b (y BIGINT);
                INSERT INTO a (x) VALUES (1);
                """
            )
            #expect(try await db.query("SELECT x FROM a", [])[0].int("x") == 1)
            #expect(try await db.query("SELECT count(*) AS n FROM b", [])[0].int("n") == 0)
            // A single statement call refuses to run (or silently drop) a second one.
            let twice = await expectDatabaseError {
                try await db.execute("INSERT INTO a (x) VALUES (2); INSERT INTO a (x) VALUES (3)", [])
            }
            #expect(twice?.code == .queryFailed)
            #expect(try await db.query("SELECT count(*) AS n FROM a", [])[0].int("n") == 1)
        }
    }

    @Test("ping answers, and a closed database says so", arguments: Backend.allCases)
    func pingAndClose(backend: Backend) async throws {
        let test = try await TestDatabase.make(backend)
        let db = try await test.open()
        try await db.ping()
        await db.close()
        await db.close()  // idempotent
        let closed = await expectDatabaseError { try await db.ping() }
        #expect(closed?.code == .closed)
        await test.remove()
    }

    @Test("typed accessors reject the wrong type with a clear message", arguments: Backend.allCases)
    func accessorMismatch(backend: Backend) async throws {
        try await withDatabase(backend) { db, _ in
            let row = try await db.query("SELECT $1 AS word", ["text"])[0]
            let error = #expect(throws: DatabaseError.self) { try row.int("word") }
            #expect(error?.code == .typeMismatch)
            #expect(error?.description.contains("'word'") == true)
            #expect(throws: DatabaseError.self) { try row.string("missing") }
            #expect(try row.string("WORD") == "text")
        }
    }

    @Test("SQLite files use WAL, synchronous=NORMAL, foreign keys, a busy timeout and temporary storage in memory")
    func sqliteSettings() async throws {
        try await withDatabase(.sqliteFile) { db, _ in
            var settings: [String: SQLValue] = [:]
            for pragma in ["journal_mode", "synchronous", "foreign_keys", "busy_timeout", "temp_store"] {
                settings[pragma] = try await db.query("PRAGMA \(pragma)", [])[0][0]
            }
            #expect(settings["journal_mode"] == "wal")
            #expect(settings["synchronous"] == 1)  // NORMAL
            #expect(settings["foreign_keys"] == 1)
            #expect(settings["busy_timeout"] == 5000)
            #expect(settings["temp_store"] == 2)  // MEMORY
        }
    }
}
