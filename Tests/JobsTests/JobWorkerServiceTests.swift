import AsyncTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import JobsTestSupport
import Storage
import Testing

/// The worker as a running service on the wall clock: it sleeps until work is due or it is woken.
@Suite("Job worker service")
struct JobWorkerServiceTests {
    static func handlers(_ calls: CallLog) -> JobHandlers {
        var handlers = JobHandlers()
        handlers.register("k") { job in
            calls.record(job)
            return .done
        }
        return handlers
    }

    @Test("runs a job added while it sleeps, and one that becomes due later", arguments: Backend.allCases)
    func wakesForWork(backend: Backend) async throws {
        let calls = CallLog()
        try await withDatabase(backend, poolSize: 4) { db, _ in
            try await Migrator.migrate(db, JobMigrations.all, logger: jobTestLogger)
            let queue = JobQueue(database: db, handlers: Self.handlers(calls), metrics: MetricsRegistry())
            let worker = JobWorker(
                queue: queue,
                configuration: JobWorkerConfiguration(idleCheckInterval: 3_600),
                logger: jobTestLogger
            )
            let running = Task { try await worker.run() }
            let now = try await queue.enqueue(NewJob(kind: "k"))
            let soon = try await queue.enqueue(NewJob(kind: "k", dueAt: Date().addingTimeInterval(0.3)))
            try await eventually(timeout: .seconds(20)) {
                calls.count(now.job.id) == 1 && calls.count(soon.job.id) == 1
            }
            try await eventually(timeout: .seconds(20)) { try await queue.job(id: soon.job.id)?.status == .done }
            worker.triggerGracefulShutdown()
            try await running.value
            #expect(calls.total == 2)
        }
    }

    @Test("graceful shutdown finishes running jobs and claims no more", arguments: [Backend.sqliteFile])
    func gracefulShutdown(backend: Backend) async throws {
        let calls = CallLog()
        let started = Latch()
        let release = Latch()
        var handlers = JobHandlers()
        handlers.register("slow") { job in
            started.open()
            try? await release.wait()
            calls.record(job)
            return .done
        }
        try await withDatabase(backend) { db, _ in
            try await Migrator.migrate(db, JobMigrations.all, logger: jobTestLogger)
            let queue = JobQueue(database: db, handlers: handlers, metrics: MetricsRegistry())
            let worker = JobWorker(
                queue: queue,
                configuration: JobWorkerConfiguration(concurrency: 2),
                logger: jobTestLogger
            )
            let first = try await queue.enqueue(NewJob(kind: "slow"))
            let running = Task { try await worker.run() }
            try await withDeadline("the slow job to start", timeout: .seconds(20)) { try await started.wait() }
            #expect(try await queue.job(id: first.job.id)?.status == .running)
            // The job is still running when shutdown begins, and finishes after.
            worker.triggerGracefulShutdown()
            release.open()
            try await running.value
            #expect(try await queue.job(id: first.job.id)?.status == .done)
            let later = try await queue.enqueue(NewJob(kind: "slow"))
            #expect(try await queue.job(id: later.job.id)?.status == .pending)
        }
    }

    @Test("PostgreSQL: a job added by another instance wakes a sleeping worker through NOTIFY")
    func notifyWakesOtherInstance() async throws {
        let calls = CallLog()
        let test = try await TestDatabase.make(.postgres)
        let instanceA = try await test.open()
        let instanceB = try await test.open()
        do {
            try await Migrator.migrate(instanceA, JobMigrations.all, logger: jobTestLogger)
            let queueA = JobQueue(database: instanceA, handlers: Self.handlers(calls), metrics: MetricsRegistry())
            let queueB = JobQueue(database: instanceB, handlers: Self.handlers(calls), metrics: MetricsRegistry())
            // Without a notification this worker would not look again for an hour.
            let worker = JobWorker(
                queue: queueA,
                configuration: JobWorkerConfiguration(lease: 3_600, idleCheckInterval: 3_600),
                logger: jobTestLogger
            )
            // A first job of its own, once done, leaves the worker asleep on an empty queue.
            let first = try await queueA.enqueue(NewJob(kind: "k"))
            let running = Task { try await worker.run() }
            try await eventually(timeout: .seconds(20)) { calls.count(first.job.id) == 1 }
            let added = try await queueB.enqueue(NewJob(kind: "k"))
            try await eventually(timeout: .seconds(20)) { calls.count(added.job.id) == 1 }
            worker.triggerGracefulShutdown()
            try await running.value
        } catch {
            await instanceA.close()
            await instanceB.close()
            await test.remove()
            throw error
        }
        await instanceA.close()
        await instanceB.close()
        await test.remove()
    }
}

@Suite("Job queue gauges")
struct JobQueueGaugeTests {
    @Test("a scrape refreshes the depth gauges, at most as often as it asks", arguments: Backend.allCases)
    func refreshedOnScrape(backend: Backend) async throws {
        try await withDatabase(backend, poolSize: 2) { db, _ in
            try await Migrator.migrate(db, JobMigrations.all, logger: jobTestLogger)
            let clock = ManualClock()
            let metrics = MetricsRegistry()
            let queue = JobQueue(database: db, handlers: JobHandlers(), clock: clock, metrics: metrics)
            let worker = JobWorker(
                queue: queue,
                configuration: JobWorkerConfiguration(),
                owner: "a",
                logger: jobTestLogger
            )
            func depth() -> Double? { metrics.value("herald_jobs_queue_depth", labels: [("status", "pending")]) }

            for _ in 0..<3 { try await queue.enqueue(NewJob(kind: "k", dueAt: clock.now().addingTimeInterval(-30))) }
            await worker.refreshQueueGauges(olderThan: .seconds(10))
            #expect(depth() == 3)
            #expect(metrics.value("herald_jobs_oldest_due_age_seconds") == 30)

            for _ in 0..<2 { try await queue.enqueue(NewJob(kind: "k")) }
            clock.advance(5)
            await worker.refreshQueueGauges(olderThan: .seconds(10))
            #expect(depth() == 3, "a sample 5 s old is fresh enough")
            clock.advance(5)
            await worker.refreshQueueGauges(olderThan: .seconds(10))
            #expect(depth() == 5)
        }
    }
}
