import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Storage
import Synchronization
import Testing

@Suite("PostgreSQL reconnects", .serialized)
struct PostgresReconnectTests {
    @Test("after the server restarts, the pool reconnects and the next statements succeed")
    func serverRestart() async throws {
        let server = try await PrivatePostgres.start()
        do {
            try await exerciseRestart(server)
        } catch {
            await server.destroy()
            throw error
        }
        await server.destroy()
    }

    private func exerciseRestart(_ server: PrivatePostgres) async throws {
        let log = RecordingLogHandler()
        let metrics = MetricsRegistry()
        let db = try await DatabaseFactory.open(
            url: server.url + "?pool_size=3",
            logger: makeLogger(log),
            metrics: metrics
        )
        try await db.execute("CREATE TABLE events (id BIGINT PRIMARY KEY)", [])
        try await db.execute("INSERT INTO events (id) VALUES ($1)", [1])
        // Open every pooled connection.
        try await concurrentReads(db, count: 12)

        try await server.restart()

        // The first statement after the restart succeeds: the dead connection is noticed before
        // anything is sent and replaced.
        #expect(try await db.query("SELECT count(*) AS n FROM events", [])[0].int("n") == 1)
        try await concurrentReads(db, count: 12)
        try await db.transaction { tx in
            try await tx.execute("INSERT INTO events (id) VALUES ($1)", [2])
        }
        try await db.ping()
        #expect((metrics.value("herald_db_reconnects_total", labels: [("driver", "postgres")]) ?? 0) >= 1)
        #expect(log.all.contains { $0.message.contains("reconnecting") })

        // While the server is down, calls fail with a connection error (no hang, no crash) ...
        try await server.stop()
        let down = await expectDatabaseError { try await db.ping() }
        #expect(down?.isConnectionError == true)
        let downInTransaction = await expectDatabaseError {
            _ = try await db.transaction { tx in try await tx.execute("INSERT INTO events (id) VALUES ($1)", [3]) }
        }
        #expect(downInTransaction?.isConnectionError == true)

        // ... and once it is back, the next call works.
        try await server.start()
        #expect(try await db.query("SELECT count(*) AS n FROM events", [])[0].int("n") == 2)
        try await concurrentReads(db, count: 12)
        await db.close()
    }

    private func concurrentReads(_ db: any Database, count: Int) async throws {
        try await withThrowingTaskGroup(of: Int64.self) { group in
            for index in 0..<count {
                group.addTask {
                    // pg_sleep keeps connections busy so that every pooled one is used.
                    try await db.query("SELECT CAST($1 AS BIGINT) AS v, pg_sleep(0.02) AS s", [.integer(Int64(index))])[
                        0
                    ]
                    .int("v")
                }
            }
            var sum: Int64 = 0
            for try await value in group { sum += value }
            #expect(sum == Int64(count * (count - 1) / 2))
        }
    }

    @Test("with the server gone, LISTEN is retried after a pause that sleeps on the database's clock")
    func listenRetriesAfterAPauseOnTheClock() async throws {
        let server = try await PrivatePostgres.start()
        do {
            try await exerciseListenRetry(server)
        } catch {
            await server.destroy()
            throw error
        }
        await server.destroy()
    }

    private func exerciseListenRetry(_ server: PrivatePostgres) async throws {
        let clock = ManualClock()
        let start = clock.now()
        let db = try await DatabaseFactory.open(
            url: server.url + "?pool_size=1",
            logger: TestDatabase.quiet,
            clock: clock
        )
        let listens = Mutex(0)
        let (listening, listeningAgain, delivered) = (Latch(), Latch(), Latch())
        // `nil` says the connection (re)started listening; a payload is a notification.
        let subscription = try await db.subscribe(channel: "clock_test") { payload in
            guard let payload else {
                let count = listens.withLock { count in
                    count += 1
                    return count
                }
                (count == 1 ? listening : listeningAgain).open()
                return
            }
            if payload == "after" { delivered.open() }
        }
        try await withDeadline("the first LISTEN", timeout: .seconds(60)) { try await listening.wait() }

        // The connection breaks and reconnecting fails: the subscription pauses 0.2 s on the
        // manual clock, and listens again once the server is back and the clock has moved.
        try await server.stop()
        try await clock.waitForSleep(within: 60)
        try await server.start()
        #expect(try await clock.advanceToNextDeadline(within: 60) == start.addingTimeInterval(0.2))
        // A reconnect that came before the restarted server accepted connections pauses again,
        // longer: move the clock past each such pause until the subscription listens.
        try await eventually("listening again", timeout: .seconds(60)) {
            if let next = clock.nextDeadline { clock.set(next) }
            return listeningAgain.isOpen
        }
        try await db.execute("SELECT pg_notify('clock_test', 'after')", [])
        try await withDeadline("the notification", timeout: .seconds(60)) { try await delivered.wait() }
        await subscription.cancel()
        await db.close()
    }

    @Test("a connection killed mid-statement fails that statement clearly; the next call reconnects")
    func connectionLostInFlight() async throws {
        try await withDatabase(.postgres, poolSize: 1) { db, test in
            let pid = try await db.query("SELECT pg_backend_pid() AS pid", [])[0].int("pid")
            let admin = try await test.open()
            let sleeping = Task { try await db.execute("SELECT pg_sleep(30)", []) }
            // Wait until the statement is running (PostgreSQL announces no statement start: poll its
            // activity view), then terminate its backend.
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
            #expect(lost?.message.contains("may or may not have been applied") == true)
            // The next call reconnects.
            let newPID = try await db.query("SELECT pg_backend_pid() AS pid", [])[0].int("pid")
            #expect(newPID != pid)
            await admin.close()
        }
    }
}
