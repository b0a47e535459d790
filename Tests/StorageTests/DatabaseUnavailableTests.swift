import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Testing

@testable import Storage

/// Busy or unreachable databases fail with an error marked ``DatabaseError/isUnavailable`` (which
/// HeraldAPI answers with 503), and PostgreSQL bounds statements and the wait for a connection.
@Suite("Database unavailable")
struct DatabaseUnavailableTests {
    /// Holds a transaction open on `db` until ``release()``; ``start()`` returns once it is open.
    final class HeldTransaction: Sendable {
        private let opened: AsyncStream<Void>
        private let gate: AsyncStream<Void>.Continuation
        private let task: Task<Void, any Error>

        init(_ db: any Database, statement: String) {
            let (opened, signal) = AsyncStream<Void>.makeStream()
            let (gate, release) = AsyncStream<Void>.makeStream()
            self.opened = opened
            self.gate = release
            task = Task {
                try await db.transaction { tx in
                    try await tx.execute(statement, [])
                    signal.yield()
                    for await _ in gate { break }
                }
            }
        }

        func start() async {
            for await _ in opened { break }
        }

        func release() async throws {
            gate.finish()
            try await task.value
        }
    }

    @Test("SQLite: a write lock held by another connection past the busy timeout is unavailable")
    func sqliteBusy() async throws {
        try await withDatabase(.sqliteFile) { db, test in
            try await db.execute("CREATE TABLE events (id BIGINT PRIMARY KEY)", [])
            let other = try await test.open()
            let holder = HeldTransaction(other, statement: "INSERT INTO events (id) VALUES (1)")
            await holder.start()
            let busy = await expectDatabaseError { try await db.execute("INSERT INTO events (id) VALUES (2)", []) }
            #expect(busy?.code == .lockTimeout)
            #expect(busy?.isUnavailable == true)
            try await holder.release()
            await other.close()
            try await db.execute("INSERT INTO events (id) VALUES (2)", [])
            #expect(try await db.query("SELECT count(*) AS n FROM events", [])[0].int("n") == 2)
        }
    }

    @Test("PostgreSQL: the statement timeout cancels a long statement, classified as unavailable")
    func postgresStatementTimeout() async throws {
        try await withDatabase(.postgres) { _, test in
            let defaults = try await DatabaseFactory.open(url: test.url, logger: TestDatabase.quiet)
            #expect(try await defaults.query("SHOW statement_timeout", [])[0].string("statement_timeout") == "30s")
            await defaults.close()
            let fromURL = try await DatabaseFactory.open(
                url: TestDatabase.withParameter(test.url, "options=-c%20statement_timeout%3D4000"),
                logger: TestDatabase.quiet
            )
            #expect(try await fromURL.query("SHOW statement_timeout", [])[0].string("statement_timeout") == "4s")
            await fromURL.close()

            var options = DatabaseOptions()
            options.statementTimeout = .milliseconds(200)
            let db = try await DatabaseFactory.open(url: test.url, logger: TestDatabase.quiet, options: options)
            let timedOut = await expectDatabaseError { try await db.execute("SELECT pg_sleep(5)", []) }
            #expect(timedOut?.code == .statementTimeout)
            #expect(timedOut?.sqlState == "57014")
            #expect(timedOut?.isUnavailable == true)
            #expect(timedOut?.message.contains("HERALD_DB_STATEMENT_TIMEOUT") == true)
            // The connection stays usable, inside transactions too.
            #expect(try await db.query("SELECT 1 AS one", [])[0].int("one") == 1)
            let inTransaction = await expectDatabaseError {
                _ = try await db.transaction { tx in try await tx.execute("SELECT pg_sleep(5)", []) }
            }
            #expect(inTransaction?.code == .statementTimeout)
            #expect(try await db.query("SELECT 2 AS two", [])[0].int("two") == 2)
            await db.close()
        }
    }

    @Test("PostgreSQL connections ask for keepalives, a TCP user timeout and the statement timeout; the URL wins")
    func postgresConnectionParameters() throws {
        guard case .postgres(let url) = try DatabaseURL(parsing: "postgres://h/db") else {
            Issue.record("not a PostgreSQL URL")
            return
        }
        var settings = PostgresSettings(
            url: url,
            logger: TestDatabase.quiet,
            metrics: DatabaseMetrics(registry: MetricsRegistry(), dialect: .postgres)
        )
        settings.options.statementTimeout = .milliseconds(1_500)
        let parameters = Dictionary(uniqueKeysWithValues: settings.connectionParameters)
        #expect(parameters["keepalives"] == "1")
        #expect(parameters["keepalives_idle"] == "30")
        #expect(parameters["keepalives_interval"] == "10")
        #expect(parameters["keepalives_count"] == "3")
        #expect(parameters["tcp_user_timeout"] == "30000")
        #expect(parameters["options"] == "-c statement_timeout=1500")
        // libpq lets later parameters override earlier ones: the URL (dbname) comes last.
        #expect(!settings.connectionParameters.contains { $0.0 == "dbname" })
        settings.options.statementTimeout = .zero
        #expect(!settings.connectionParameters.contains { $0.0 == "options" })
        #expect(PostgresSettings.milliseconds(.seconds(Int64.max)) == Int(Int32.max))
        #expect(PostgresSettings.milliseconds(.seconds(-1)) == 0)
    }

    @Test("PostgreSQL: with every pooled connection busy, a statement fails at the acquire deadline")
    func postgresAcquireDeadline() async throws {
        try await withDatabase(.postgres, poolSize: 1) { _, test in
            var options = DatabaseOptions()
            options.acquireTimeout = .milliseconds(200)
            let db = try await DatabaseFactory.open(url: test.url, logger: TestDatabase.quiet, options: options)
            let holder = HeldTransaction(db, statement: "SELECT 1")
            await holder.start()
            let statement = await expectDatabaseError { _ = try await db.query("SELECT 1", []) }
            #expect(statement?.code == .acquireTimeout)
            #expect(statement?.isUnavailable == true)
            #expect(statement?.message.contains("pool_size") == true)
            let transaction = await expectDatabaseError { try await db.transaction { _ in } }
            #expect(transaction?.code == .acquireTimeout)
            try await holder.release()
            // The connection came back to the pool.
            #expect(try await db.query("SELECT 3 AS three", [])[0].int("three") == 3)
            await db.close()
        }
    }

    @Test("PostgreSQL: a connection killed mid-statement, or a server that cannot be reached, is unavailable")
    func postgresConnectionLost() async throws {
        try await withDatabase(.postgres, poolSize: 1) { db, test in
            let pid = try await db.query("SELECT pg_backend_pid() AS pid", [])[0].int("pid")
            let admin = try await test.open()
            let sleeping = Task { try await db.execute("SELECT pg_sleep(30)", []) }
            // PostgreSQL announces no statement start: poll its activity view.
            try await eventually("the statement to be active on the server") {
                let active = try await admin.query(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE pid = $1 AND state = 'active'",
                    [.integer(pid)]
                )
                return try active[0].int("n") == 1
            }
            let terminated = try await admin.query("SELECT pg_terminate_backend($1) AS ok", [.integer(pid)])[0]
                .bool("ok")
            #expect(terminated)
            let lost = await expectDatabaseError { _ = try await sleeping.value }
            #expect(lost?.code == .connectionLost)
            #expect(lost?.isUnavailable == true)
            await admin.close()

            // Nothing listens on port 1: connecting fails at once.
            let unreachable = await expectDatabaseError {
                _ = try await DatabaseFactory.open(
                    url: "postgres://herald@127.0.0.1:1/herald",
                    logger: TestDatabase.quiet
                )
            }
            #expect(unreachable?.code == .connectionFailed)
            #expect(unreachable?.isUnavailable == true)
        }
    }
}
