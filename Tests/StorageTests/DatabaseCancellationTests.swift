import DatabaseTestSupport
import Storage
import Testing

/// Writes that must land during shutdown run in cancelled tasks: inside
/// `withDatabaseCancellationIgnored` they still take a connection, on every backend.
@Suite("Database calls exempt from cancellation")
struct DatabaseCancellationTests {
    @Test("a cancelled task's call fails, and succeeds when exempt", arguments: Backend.allCases)
    func exemptCallInACancelledTask(backend: Backend) async throws {
        try await withDatabase(backend, poolSize: 1) { db, _ in
            await withTaskGroup(of: Void.self) { group in
                group.cancelAll()
                group.addTask {
                    #expect(Task.isCancelled)
                    await #expect(throws: CancellationError.self) { try await db.query("SELECT 1 AS one", []) }
                    let rows = try? await withDatabaseCancellationIgnored {
                        try await db.query("SELECT 1 AS one", [])
                    }
                    #expect((try? rows?.first?.int("one")) == 1)
                }
            }
        }
    }

    @Test("an exempt call waiting for a busy connection keeps waiting when cancelled", arguments: Backend.allCases)
    func exemptWaitSurvivesCancellation(backend: Backend) async throws {
        try await withDatabase(backend, poolSize: 1) { db, _ in
            let (held, holding) = AsyncStream.makeStream(of: Void.self)
            let (done, finish) = AsyncStream.makeStream(of: Void.self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await db.transaction { transaction in
                        _ = try await transaction.query("SELECT 1 AS one", [])
                        holding.yield()
                        for await _ in done { break }
                    }
                }
                for await _ in held { break }
                let waiter = Task {
                    try await withDatabaseCancellationIgnored { try await db.query("SELECT 2 AS two", []) }
                }
                waiter.cancel()
                finish.finish()
                let rows = try await waiter.value
                #expect(try rows.first?.int("two") == 2)
                try await group.waitForAll()
            }
        }
    }
}
