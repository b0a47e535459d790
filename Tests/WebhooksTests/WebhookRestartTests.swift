import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Storage
import Testing

@testable import Webhooks

/// Durability: events recorded by one instance that stopped before delivering them are delivered
/// once by the next instance on the same database, through the real job worker and clock.
@Suite("webhook restart")
struct WebhookRestartTests {
    @Test("undelivered events survive a restart and are delivered once", arguments: [Backend.sqliteFile, .postgres])
    func restart(backend: Backend) async throws {
        let receiver = try Receiver()
        let test = try await TestDatabase.make(backend, poolSize: 4)
        defer { Task { await test.remove() } }
        try await receiver.run {
            // The first instance records events, then stops before its worker ran.
            let first = try await test.open(logger: quietLogger)
            try await Migrator.migrate(first, JobMigrations.all + WebhookMigrations.all, logger: quietLogger)
            let before = try WebhookHarness.make(first, clock: SystemClock())
            let webhook = try await before.createWebhook(url: receiver.url)
            let recorded = try await before.recordInvalidations(5)
            await before.deliverer.close()
            await first.close()
            #expect(receiver.deliveries.isEmpty)

            // The second instance's worker finds the job and delivers them.
            let second = try await test.open(logger: quietLogger)
            let after = try WebhookHarness.make(second, clock: SystemClock())
            let worker = JobWorker(
                queue: after.queue,
                configuration: JobWorkerConfiguration(concurrency: 2, batchSize: 2, lease: 30),
                owner: "second-instance",
                logger: quietLogger
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                try await eventually("the events are delivered and the job is done", timeout: .seconds(90)) {
                    let state = try await after.store.state(id: webhook.id)
                    let active = try await second.queryFirst(
                        "SELECT COUNT(*) AS n FROM jobs WHERE status IN ('pending', 'running')"
                    )?.int("n")
                    return state?.pending == 0 && state?.delivered == 5 && active == 0
                }
                worker.triggerGracefulShutdown()
                try await group.waitForAll()
            }
            let delivered = receiver.deliveries.flatMap(\.eventIDs)
            #expect(delivered.sorted() == recorded.map { RequestIdentifier.lowercaseString($0.id) }.sorted())
            await after.deliverer.close()
            await second.close()
        }
    }
}
