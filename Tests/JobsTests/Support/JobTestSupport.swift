import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import JobsTestSupport
import Storage
import Synchronization
import Testing

/// Counts handler calls by job id.
final class CallLog: Sendable {
    private let calls = Mutex<[UUID: Int]>([:])

    func record(_ job: Job) {
        calls.withLock { $0[job.id, default: 0] += 1 }
    }

    func count(_ id: UUID) -> Int { calls.withLock { $0[id] ?? 0 } }

    var total: Int { calls.withLock { $0.values.reduce(0, +) } }
}

let jobTestLogger = Logger(label: "herald.jobs.test", level: .error, handler: RecordingLogHandler())

/// Opens a fresh, migrated database of `backend` with a queue on a manual clock.
func withQueue(
    _ backend: Backend,
    handlers: JobHandlers = JobHandlers(),
    clock: ManualClock = ManualClock(),
    configuration: JobWorkerConfiguration = JobWorkerConfiguration(concurrency: 8, batchSize: 4, lease: 30),
    _ body: (JobQueue, JobWorker, ManualClock, TestDatabase) async throws -> Void
) async throws {
    try await withDatabase(backend, poolSize: 4) { db, test in
        try await Migrator.migrate(db, JobMigrations.all, logger: jobTestLogger)
        let queue = JobQueue(database: db, handlers: handlers, clock: clock, metrics: MetricsRegistry())
        let worker = JobWorker(queue: queue, configuration: configuration, owner: "worker-a", logger: jobTestLogger)
        try await body(queue, worker, clock, test)
    }
}
