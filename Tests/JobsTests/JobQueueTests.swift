import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import JobsTestSupport
import Storage
import Testing

/// The queue's contract, on SQLite (memory and file) and PostgreSQL, through an injected clock.
@Suite("Job queue")
struct JobQueueTests {
    @Test("claims due jobs oldest first, once, and leaves future ones", arguments: Backend.allCases)
    func claimSemantics(backend: Backend) async throws {
        try await withQueue(backend) { queue, _, clock, _ in
            let now = clock.now()
            let later = try await queue.enqueue(
                NewJob(kind: "k", payload: #"{"n":3}"#, dueAt: now.addingTimeInterval(60))
            )
            let second = try await queue.enqueue(
                NewJob(kind: "k", payload: #"{"n":2}"#, dueAt: now.addingTimeInterval(-5))
            )
            let first = try await queue.enqueue(
                NewJob(kind: "k", payload: #"{"n":1}"#, dueAt: now.addingTimeInterval(-10))
            )
            #expect(try await queue.nextDueDate() == first.job.dueAt)

            let claimed = try await queue.claim(owner: "a", limit: 10, lease: 30)
            #expect(claimed.map(\.id) == [first.job.id, second.job.id])
            #expect(claimed.allSatisfy { $0.status == .running && $0.attempts == 1 && $0.leaseOwner == "a" })
            #expect(claimed.first?.leaseExpiresAt == now.addingTimeInterval(30))
            #expect(claimed.first?.payload == #"{"n":1}"#)
            #expect(try await queue.claim(owner: "b", limit: 10, lease: 30).isEmpty)

            clock.advance(60)
            let third = try await queue.claim(owner: "b", limit: 10, lease: 30)
            #expect(third.map(\.id) == [later.job.id])
        }
    }

    @Test("a batch limit is respected and concurrent claimers never share a job", arguments: Backend.allCases)
    func concurrentClaims(backend: Backend) async throws {
        try await withQueue(backend) { queue, _, clock, _ in
            for index in 0..<60 {
                try await queue.enqueue(NewJob(kind: "k", payload: "{\"i\":\(index)}", dueAt: clock.now()))
            }
            #expect(try await queue.claim(owner: "probe", limit: 5, lease: 30).count == 5)
            let claims = try await withThrowingTaskGroup(of: [Job].self) { group in
                for owner in 0..<4 {
                    group.addTask {
                        var mine: [Job] = []
                        while true {
                            let batch = try await queue.claim(owner: "o\(owner)", limit: 3, lease: 30)
                            if batch.isEmpty { return mine }
                            mine += batch
                        }
                    }
                }
                return try await group.reduce(into: [Job]()) { $0 += $1 }
            }
            #expect(claims.count == 55)
            #expect(Set(claims.map(\.id)).count == 55)
        }
    }

    @Test(
        "an expired lease returns the job to the queue; the old owner's result is refused",
        arguments: Backend.allCases
    )
    func leaseExpiry(backend: Backend) async throws {
        try await withQueue(backend) { queue, _, clock, _ in
            let added = try await queue.enqueue(NewJob(kind: "k"))
            let claimed = try #require(try await queue.claim(owner: "dead-instance", limit: 1, lease: 30).first)
            clock.advance(20)
            #expect(try await queue.recoverExpiredLeases() == 0)
            clock.advance(11)
            #expect(try await queue.recoverExpiredLeases() == 1)
            let recovered = try #require(try await queue.job(id: added.job.id))
            #expect(recovered.status == .pending)
            #expect(recovered.lastError?.contains("lease expired") == true)

            let retaken = try #require(try await queue.claim(owner: "live", limit: 1, lease: 30).first)
            #expect(retaken.attempts == 2)
            #expect(try await queue.finish(claimed, .done, owner: "dead-instance") == nil)
            let done = try await queue.finish(retaken, .done, owner: "live")
            #expect(done?.status == .done)
            #expect(done?.finishedAt == clock.now())
        }
    }

    @Test("a batch of outcomes is recorded in one call, each as it says", arguments: Backend.allCases)
    func batchFinish(backend: Backend) async throws {
        try await withQueue(backend) { queue, _, clock, _ in
            for index in 0..<5 { try await queue.enqueue(NewJob(kind: "k", payload: "{\"i\":\(index)}")) }
            let recurring = try await queue.enqueue(NewJob(kind: "k", schedule: try .every(seconds: 60)))
            let claimed = try await queue.claim(owner: "a", limit: 10, lease: 30)
            #expect(claimed.count == 6)
            let plain = claimed.filter { $0.schedule == nil }
            // Two leases were taken over by another instance meanwhile.
            for stolen in [plain[0], plain[4]] {
                try await queue.database.execute(
                    "UPDATE jobs SET lease_owner = 'b' WHERE id = $1",
                    [.text(stolen.id.uuidString.lowercased())]
                )
            }
            let outcomes: [(Job, JobOutcome?)] = [
                (plain[1], .done), (plain[2], .failed(reason: "bad payload")),
                (plain[3], .retry(reason: "503", after: 5)), (plain[0], .done),
                (claimed.first { $0.id == recurring.job.id }!, .done), (plain[4], .done),
            ]
            let stored = try await queue.finish(outcomes, owner: "a")
            #expect(stored.map { $0?.status } == [.done, .failed, .pending, nil, .done, nil])
            #expect(stored[2]?.dueAt == clock.now().addingTimeInterval(5))
            let next = try await queue.list(statuses: [.pending], kind: "k")
            #expect(next.contains { $0.schedule != nil && $0.dueAt == recurring.job.dueAt.addingTimeInterval(60) })
        }
    }

    @Test("a renewed lease is not recovered", arguments: Backend.allCases)
    func leaseRenewal(backend: Backend) async throws {
        try await withQueue(backend) { queue, _, clock, _ in
            let added = try await queue.enqueue(NewJob(kind: "k"))
            _ = try await queue.claim(owner: "a", limit: 1, lease: 30)
            clock.advance(25)
            #expect(try await queue.extendLeases(owner: "a", lease: 30) == 1)
            clock.advance(25)
            #expect(try await queue.recoverExpiredLeases() == 0)
            #expect(try await queue.job(id: added.job.id)?.status == .running)
        }
    }

    @Test("retryable failures back off exponentially with jitter, then the job is dead", arguments: Backend.allCases)
    func retryThenDead(backend: Backend) async throws {
        var handlers = JobHandlers()
        let calls = CallLog()
        let gaveUp = CallLog()
        handlers.register(
            "flaky",
            options: JobKindOptions(maxAttempts: 3, retryBase: 10, retryMaximum: 15),
            onGiveUp: { job, reason in
                #expect(reason == "APNs answered 503 ServiceUnavailable")
                gaveUp.record(job)
            }
        ) { job in
            calls.record(job)
            return .retry(reason: "APNs answered 503 ServiceUnavailable")
        }
        try await withQueue(backend, handlers: handlers) { queue, worker, clock, _ in
            let added = try await queue.enqueue(NewJob(kind: "flaky"))
            #expect(added.job.maxAttempts == 3)

            #expect(try await worker.runDueJobs() == 1)
            var job = try #require(try await queue.job(id: added.job.id))
            #expect(job.status == .pending)
            #expect(job.attempts == 1)
            #expect(job.lastError == "APNs answered 503 ServiceUnavailable")
            let firstDelay = job.dueAt.timeIntervalSince(clock.now())
            #expect(firstDelay >= 5 && firstDelay <= 10)
            #expect(try await worker.runDueJobs() == 0)

            clock.advance(firstDelay)
            #expect(try await worker.runDueJobs() == 1)
            job = try #require(try await queue.job(id: added.job.id))
            let secondDelay = job.dueAt.timeIntervalSince(clock.now())
            #expect(secondDelay >= 7.5 && secondDelay <= 15)  // 20 s capped at 15, times 0.5…1

            clock.advance(secondDelay)
            #expect(try await worker.runDueJobs() == 1)
            job = try #require(try await queue.job(id: added.job.id))
            #expect(job.status == .dead)
            #expect(job.attempts == 3)
            #expect(calls.count(added.job.id) == 3)
            #expect(gaveUp.count(added.job.id) == 1, "the give-up hook runs once, on the last attempt")
            clock.advance(3_600)
            #expect(try await worker.runDueJobs() == 0)
        }
    }

    @Test("a thrown error is retried, a permanent failure is not, an unknown kind fails", arguments: Backend.allCases)
    func outcomes(backend: Backend) async throws {
        struct Boom: Error, CustomStringConvertible { var description: String { "connection reset" } }
        var handlers = JobHandlers()
        handlers.register("throws") { _ in throw Boom() }
        handlers.register("bad") { _ in .failed(reason: "payload is not an object") }
        handlers.register("good") { _ in .done }
        try await withQueue(backend, handlers: handlers) { queue, worker, _, _ in
            let thrown = try await queue.enqueue(NewJob(kind: "throws"))
            let bad = try await queue.enqueue(NewJob(kind: "bad"))
            let good = try await queue.enqueue(NewJob(kind: "good"))
            let unknown = try await queue.enqueue(NewJob(kind: "nobody.handles.this"))
            #expect(try await worker.runDueJobs() == 4)
            let thrownJob = try await queue.job(id: thrown.job.id)
            #expect(thrownJob?.status == .pending)
            #expect(thrownJob?.lastError == "connection reset")
            #expect(try await queue.job(id: bad.job.id)?.status == .failed)
            #expect(try await queue.job(id: good.job.id)?.status == .done)
            let unknownJob = try await queue.job(id: unknown.job.id)
            #expect(unknownJob?.status == .failed)
            #expect(unknownJob?.lastError?.contains("no handler") == true)
            let summary = try await queue.summary()
            #expect(summary.count(.done) == 1)
            #expect(summary.count(.failed) == 2)
            #expect(summary.count(.pending) == 1)
        }
    }

    @Test("a postponed attempt runs again at its time and is not counted", arguments: Backend.allCases)
    func postponeDoesNotCountAttempts(backend: Backend) async throws {
        var handlers = JobHandlers()
        let calls = CallLog()
        handlers.register("busy", options: JobKindOptions(maxAttempts: 2, retryBase: 10, retryMaximum: 10)) {
            job in
            calls.record(job)
            // Busy on every run but the fifth: more postponements than the job has attempts.
            if calls.count(job.id) < 5 {
                return .postpone(reason: "held elsewhere", until: job.dueAt.addingTimeInterval(30))
            }
            return .done
        }
        try await withQueue(backend, handlers: handlers) { queue, worker, clock, _ in
            let added = try await queue.enqueue(NewJob(kind: "busy"))
            for run in 1...4 {
                #expect(try await worker.runDueJobs() == 1, "run \(run)")
                let job = try #require(try await queue.job(id: added.job.id))
                #expect(job.status == .pending)
                #expect(job.attempts == 0, "a postponed attempt counted")
                #expect(job.lastError == "held elsewhere")
                #expect(job.dueAt.timeIntervalSince(clock.now()) == 30)
                #expect(try await worker.runDueJobs() == 0, "a postponed job ran before its time")
                clock.advance(30)
            }
            #expect(try await worker.runDueJobs() == 1)
            let done = try #require(try await queue.job(id: added.job.id))
            #expect(done.status == .done)
            #expect(done.attempts == 1)
            #expect(calls.count(added.job.id) == 5)
        }
    }

    @Test("cancel works on pending jobs only; retry revives finished ones", arguments: Backend.allCases)
    func cancelAndRetry(backend: Backend) async throws {
        var handlers = JobHandlers()
        handlers.register("bad") { _ in .failed(reason: "no") }
        try await withQueue(backend, handlers: handlers) { queue, worker, clock, _ in
            let later = try await queue.enqueue(NewJob(kind: "k", dueAt: clock.now().addingTimeInterval(600)))
            let cancelled = try await queue.cancel(id: later.job.id)
            #expect(cancelled.status == .cancelled)
            clock.advance(601)
            #expect(try await queue.claim(owner: "a", limit: 10, lease: 30).isEmpty)

            do {
                _ = try await queue.cancel(id: later.job.id)
                Issue.record("cancelling a cancelled job succeeded")
            } catch let error as JobError {
                #expect(error.code == .conflict)
                #expect(error.message.contains("it is cancelled"))
            }
            do {
                _ = try await queue.cancel(id: UUID())
                Issue.record("cancelling an unknown job succeeded")
            } catch let error as JobError {
                #expect(error.code == .notFound)
            }

            let running = try await queue.enqueue(NewJob(kind: "k"))
            _ = try await queue.claim(owner: "a", limit: 10, lease: 30)
            await #expect(throws: JobError.self) { try await queue.cancel(id: running.job.id) }

            let failing = try await queue.enqueue(NewJob(kind: "bad"))
            try await worker.runDueJobs()
            #expect(try await queue.job(id: failing.job.id)?.status == .failed)
            let revived = try await queue.retry(id: failing.job.id)
            #expect(revived.status == .pending)
            #expect(revived.attempts == 0)
            await #expect(throws: JobError.self) { try await queue.retry(id: revived.id) }
        }
    }

    @Test("a unique key names at most one active job", arguments: Backend.allCases)
    func uniqueKeys(backend: Backend) async throws {
        var handlers = JobHandlers()
        handlers.register("k") { _ in .done }
        try await withQueue(backend, handlers: handlers) { queue, worker, clock, _ in
            let first = try await queue.enqueue(NewJob(kind: "k", dueAt: clock.now(), uniqueKey: "meeting-42"))
            let again = try await queue.enqueue(NewJob(kind: "k", dueAt: clock.now(), uniqueKey: "meeting-42"))
            #expect(first.inserted)
            #expect(!again.inserted)
            #expect(again.job.id == first.job.id)
            let other = try await queue.enqueue(NewJob(kind: "k", uniqueKey: "meeting-43"))
            #expect(other.inserted)
            #expect(try await worker.runDueJobs() == 2)
            let afterDone = try await queue.enqueue(NewJob(kind: "k", uniqueKey: "meeting-42"))
            #expect(afterDone.inserted)
            #expect(afterDone.job.id != first.job.id)
        }
    }

    @Test("bad jobs are refused with a message", arguments: [Backend.sqliteMemory])
    func validation(backend: Backend) async throws {
        try await withQueue(backend) { queue, _, _, _ in
            for bad in [
                NewJob(kind: ""), NewJob(kind: String(repeating: "k", count: 101)),
                NewJob(kind: "k", maxAttempts: 0), NewJob(kind: "k", uniqueKey: ""),
                NewJob(kind: "k", payload: String(repeating: " ", count: JobQueue.maximumPayloadBytes + 1)),
            ] {
                await #expect(throws: JobError.self) { try await queue.enqueue(bad) }
            }
            let summary = try await queue.summary()
            #expect(summary.counts.isEmpty)
        }
    }

    @Test("finished jobs are pruned after the retention period", arguments: Backend.allCases)
    func pruning(backend: Backend) async throws {
        var handlers = JobHandlers()
        handlers.register("k") { _ in .done }
        try await withQueue(backend, handlers: handlers) { queue, worker, clock, _ in
            let old = try await queue.enqueue(NewJob(kind: "k"))
            try await worker.runDueJobs()
            clock.advance(100)
            let pending = try await queue.enqueue(NewJob(kind: "k", dueAt: clock.now().addingTimeInterval(1)))
            #expect(try await queue.prune(finishedBefore: clock.now().addingTimeInterval(-50)) == 1)
            #expect(try await queue.job(id: old.job.id) == nil)
            #expect(try await queue.job(id: pending.job.id) != nil)
        }
    }

    @Test("jobs due while SQLite Herald was stopped run after the restart, recurring ones per their policy")
    func dueWhileStopped() async throws {
        let test = try await TestDatabase.make(.sqliteFile)
        defer { Task { await test.remove() } }
        let clock = ManualClock()
        var handlers = JobHandlers()
        let calls = CallLog()
        handlers.register("k") { job in
            calls.record(job)
            return .done
        }
        var db = try await test.open()
        try await Migrator.migrate(db, JobMigrations.all, logger: jobTestLogger)
        let before = JobQueue(database: db, handlers: handlers, clock: clock, metrics: MetricsRegistry())
        let start = clock.now()
        let added = try await before.enqueue(NewJob(kind: "k", dueAt: start.addingTimeInterval(3_600)))
        let hourly = try await before.enqueue(
            NewJob(kind: "k", dueAt: start.addingTimeInterval(600), schedule: try .every(seconds: 3_600))
        )
        let skipping = try await before.enqueue(
            NewJob(
                kind: "k",
                dueAt: start.addingTimeInterval(600),
                schedule: try .every(seconds: 3_600),
                missedRuns: .skip
            )
        )
        await db.close()

        clock.advance(3 * 3_600)  // down for three hours: each recurring job missed three runs
        db = try await test.open()
        let queue = JobQueue(database: db, handlers: handlers, clock: clock, metrics: MetricsRegistry())
        let worker = JobWorker(queue: queue, owner: "after-restart", logger: jobTestLogger)
        #expect(try await worker.runDueJobs() == 3)
        #expect(calls.count(added.job.id) == 1)
        #expect(try await queue.job(id: added.job.id)?.status == .done)
        #expect(calls.count(hourly.job.id) == 1, "run_once: one catch-up run")
        #expect(calls.count(skipping.job.id) == 0, "skip: the missed run does not run")
        let next = try await queue.list(statuses: [.pending])
        #expect(next.count == 2)
        #expect(next.allSatisfy { $0.dueAt == start.addingTimeInterval(600 + 3 * 3_600) })
        await db.close()
    }
}
