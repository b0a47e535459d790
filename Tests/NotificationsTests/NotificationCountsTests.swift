import APNs
import APNsSimulator
import DatabaseTestSupport
import Devices
import Foundation
import HeraldCore
import Jobs
import Storage
import Testing

@testable import Notifications

/// The counts a notification reports are kept on its row, in the transactions that write its
/// results; they must always be what counting its result rows gives.
@Suite("Notifications: counts kept on the notification's row")
struct NotificationCountsTests {
    /// Tokens per status as a `COUNT` over the results gives them (the tokens of stored pages
    /// without a row are pending).
    static func counted(_ database: any Database, _ id: UUID) async throws -> DeliveryCounts {
        var counts = DeliveryCounts()
        for row in try await database.query(
            "SELECT status, COUNT(*) AS n FROM notification_deliveries WHERE notification_id = $1 GROUP BY status",
            [SQLValue(id)]
        ) {
            counts.counts[try #require(DeliveryStatus(rawValue: try row.string("status")))] = Int(try row.int("n"))
        }
        let row = try #require(
            try await database.queryFirst("SELECT token_count FROM notifications WHERE id = $1", [SQLValue(id)])
        )
        let unrecorded = Int(try row.int("token_count")) - counts.total
        if unrecorded > 0 { counts.counts[.pending, default: 0] += unrecorded }
        return counts
    }

    /// The row's counts, checked against a `COUNT` of the results.
    static func checkedCounts(_ harness: NotificationHarness, _ id: UUID) async throws -> DeliveryCounts {
        let kept = try await harness.store.counts(id: id)
        #expect(try await kept == counted(harness.database, id))
        return kept
    }

    @Test(
        "sent, dead, rejected, retried and failed tokens: counted once each, retries and rewrites included",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func mixedOutcomes(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend, retryPolicy: .never) { harness in
            let tokens = NotificationHarness.tokens(10)
            // tokens[0] fails once then goes through; tokens[3] fails on every attempt.
            _ = harness.simulator.addFault(
                APNSSimulatorFault(.respond(status: 500, reason: .internalServerError), token: tokens[0], times: 1)
            )
            _ = harness.simulator.addFault(
                APNSSimulatorFault(.respond(status: 503, reason: .serviceUnavailable), token: tokens[3], times: 10)
            )
            _ = harness.simulator.addFault(
                APNSSimulatorFault(.respond(status: 400, reason: .badExpirationDate), token: tokens[2], times: 10)
            )
            harness.simulator.setToken(APNSSimulatorTokenState(token: tokens[1], unregisteredAt: Date()))
            let created = try await harness.create(tokens: tokens)
            #expect(try await Self.checkedCounts(harness, created.id) == DeliveryCounts(counts: [.pending: 10]))

            #expect(try await harness.worker.runDueJobs() == 1)
            #expect(
                try await Self.checkedCounts(harness, created.id)
                    == DeliveryCounts(counts: [.sent: 6, .dead: 1, .rejected: 1, .retrying: 2])
            )

            harness.clock.advance(61)
            #expect(try await harness.worker.runDueJobs() == 1)
            #expect(
                try await Self.checkedCounts(harness, created.id)
                    == DeliveryCounts(counts: [.sent: 7, .dead: 1, .rejected: 1, .retrying: 1])
            )

            // The last attempt: what still fails is failed.
            harness.clock.advance(61)
            #expect(try await harness.worker.runDueJobs() == 1)
            #expect(
                try await Self.checkedCounts(harness, created.id)
                    == DeliveryCounts(counts: [.sent: 7, .dead: 1, .rejected: 1, .failed: 1])
            )
            #expect(try await harness.store.notification(id: created.id)?.status == .failed)

            // A result written again (a second sender's, after its claim expired) moves no count.
            let written = try await harness.results(created.id)
            let stored = try #require(try await harness.store.notification(id: created.id))
            try await harness.store.record(Array(written[4...6]), of: stored)
            // A later result replaces the earlier one: one token moves, from failed to sent.
            var late = written[3]
            late.status = .sent
            late.reason = nil
            try await harness.store.record([late], of: stored)
            #expect(
                try await Self.checkedCounts(harness, created.id)
                    == DeliveryCounts(counts: [.sent: 8, .dead: 1, .rejected: 1])
            )
        }
    }

    @Test(
        "tokens answered before a cancel keep their count; the others count as cancelled",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func pagesAndCancel(_ backend: Backend) async throws {
        try await NotificationHarness.with(backend) { harness in
            let tokens = NotificationHarness.tokens(6)
            let created = try await harness.create(
                tokens: tokens,
                extra: ["send_at": Int(harness.clock.now().timeIntervalSince1970) + 600]
            )
            let owner = NotificationStore.SendOwnership(owner: "test", until: harness.clock.now() + 60)
            // Two tokens answered, then cancelled before the rest: the others are cancelled.
            let first = try await harness.store.unfinished(id: created.id, limit: 2).map { result in
                var result = result
                result.status = .sent
                return result
            }
            try await harness.store.record(first, of: created, ownership: owner)
            #expect(
                try await Self.checkedCounts(harness, created.id) == DeliveryCounts(counts: [.sent: 2, .pending: 4])
            )
            _ = try await harness.service.cancel(id: created.id)
            #expect(
                try await Self.checkedCounts(harness, created.id) == DeliveryCounts(counts: [.sent: 2, .cancelled: 4])
            )
        }
    }

    @Test(
        "Notifications 6 (released as 20) counts the results of notifications stored before it",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func backfill(_ backend: Backend) async throws {
        try await withDatabase(backend) { database, _ in
            let before = (JobMigrations.all + NotificationMigrations.all + DeviceMigrations.all).filter {
                ($0.releasedAs ?? Int.max) < 20
            }
            try await Migrator.migrate(database, before, logger: quietLogger)
            let id = UUID()
            let now = EpochTime.milliseconds(Date())
            try await database.execute(
                """
                INSERT INTO notifications (id, app, environment, push_type, topic, payload, send_at, status,
                    token_count, created_at, updated_at)
                VALUES ($1, 'app', 'production', 'alert', 'topic', '{}', $2, 'sending', 5, $2, $2)
                """,
                [SQLValue(id), .integer(now)]
            )
            // Three rows (two sent, one dead); two tokens of a stored page have none yet.
            for (ordinal, status) in ["sent", "sent", "dead"].enumerated() {
                try await database.execute(
                    """
                    INSERT INTO notification_deliveries (notification_id, token, ordinal, status, attempts, updated_at)
                    VALUES ($1, $2, $3, $4, 1, $5)
                    """,
                    [SQLValue(id), .text("t\(ordinal)"), SQLValue(ordinal), .text(status), .integer(now)]
                )
            }
            try await Migrator.migrate(
                database,
                JobMigrations.all + NotificationMigrations.all + DeviceMigrations.all,
                logger: quietLogger
            )
            let store = NotificationStore(database: database)
            #expect(try await store.counts(id: id) == DeliveryCounts(counts: [.sent: 2, .dead: 1, .pending: 2]))
            #expect(try await store.counts(id: id) == Self.counted(database, id))
        }
    }
}
