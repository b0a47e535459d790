import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import JobsTestSupport
import Storage
import Synchronization
import Testing

/// A handler that runs until it is cancelled, and says when it started and when it was cancelled.
final class BlockingHandler: Sendable {
    let started = JobWakeup()
    let cancelled = JobWakeup()
    private let wasCancelled = Atomic<Bool>(false)

    var sawCancellation: Bool { wasCancelled.load(ordering: .acquiring) }

    func run() async throws -> JobOutcome {
        started.signal()
        let never = JobWakeup()
        // Returns only when this task is cancelled.
        await never.wait(for: nil)
        wasCancelled.store(Task.isCancelled, ordering: .releasing)
        cancelled.signal()
        throw CancellationError()
    }
}

/// Waits for `wakeup` for at most `seconds`; records an issue when it did not come.
func expectSignal(
    _ wakeup: JobWakeup,
    within seconds: Int64 = 20,
    _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    let signalled = await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            await wakeup.wait(for: nil)
            return !Task.isCancelled
        }
        group.addTask {
            // The liveness bound the wake-up races: it fails the test instead of hanging it.
            try? await Task.sleep(for: .seconds(seconds))
            return false
        }
        let first = await group.next() ?? false
        group.cancelAll()
        return first
    }
    if !signalled { Issue.record("\(what) did not happen within \(seconds) s", sourceLocation: sourceLocation) }
}

/// A service that asks the group to shut down once `trigger` is signalled.
struct StopWhenSignalled: Service {
    let trigger: JobWakeup

    func run() async throws {
        await trigger.wait(for: nil)
    }

    func triggerGracefulShutdown() {}
}

@Suite("Job worker: lost leases and shutdown")
struct JobInterruptionTests {
    @Test("a handler whose lease was taken over is cancelled at the next renewal", arguments: Backend.allCases)
    func lostLeaseCancelsHandler(backend: Backend) async throws {
        let handler = BlockingHandler()
        var handlers = JobHandlers()
        handlers.register("block") { _ in try await handler.run() }
        let clock = ManualClock()
        try await withQueue(
            backend,
            handlers: handlers,
            clock: clock,
            configuration: JobWorkerConfiguration(concurrency: 2, batchSize: 2, lease: 30, idleCheckInterval: 3_600)
        ) { queue, worker, clock, _ in
            let added = try await queue.enqueue(NewJob(kind: "block"))
            let running = Task { try await worker.run() }
            await expectSignal(handler.started, "the handler's start")
            // Another instance recovered the lease and claimed the job.
            try await queue.database.execute(
                "UPDATE jobs SET lease_owner = 'worker-b' WHERE id = $1",
                [.text(RequestIdentifier.lowercaseString(added.job.id))]
            )
            clock.advance(11)
            queue.wake()
            await expectSignal(handler.cancelled, "the handler's cancellation")
            #expect(handler.sawCancellation)
            worker.triggerGracefulShutdown()
            // A handler never cancelled would keep the worker running: stop it the hard way.
            if !handler.sawCancellation { running.cancel() }
            try await running.value
            // Nothing was recorded over the other instance's claim.
            let job = try #require(try await queue.job(id: added.job.id))
            #expect(job.status == .running)
            #expect(job.leaseOwner == "worker-b")
        }
    }

    @Test(
        "a job interrupted by shutdown returns to pending with its attempt count unchanged",
        arguments: Backend.allCases
    )
    func shutdownKeepsAttempts(backend: Backend) async throws {
        let handler = BlockingHandler()
        var handlers = JobHandlers()
        handlers.register("block", options: JobKindOptions(maxAttempts: 2)) { _ in try await handler.run() }
        try await withQueue(backend, handlers: handlers) { queue, worker, _, _ in
            let added = try await queue.enqueue(NewJob(kind: "block"))
            let stop = JobWakeup()
            let group = ServiceGroup(
                services: [worker, StopWhenSignalled(trigger: stop)],
                signals: [],
                gracePeriod: .milliseconds(200),
                logger: jobTestLogger
            )
            async let ran: Void = group.run()
            await expectSignal(handler.started, "the handler's start")
            #expect(try await queue.job(id: added.job.id)?.attempts == 1)
            // Graceful shutdown begins; the handler outlives the grace period and is cancelled.
            stop.signal()
            do {
                try await ran
            } catch is CancellationError {
                // What the group throws when its grace period ends with a service still running.
            }
            #expect(handler.sawCancellation)
            let job = try #require(try await queue.job(id: added.job.id))
            #expect(job.status == .pending)
            #expect(job.attempts == 0)
            #expect(job.leaseOwner == nil)
            #expect(job.dueAt == added.job.dueAt)
        }
    }
}

@Suite("Job wake-ups")
struct JobWakeupTests {
    @Test("waitIgnoringCancellation returns on a signal only, also in a cancelled task")
    func waitIgnoringCancellation() async {
        let wakeup = JobWakeup()
        let entered = JobWakeup()
        let returned = ReturnFlag()
        let waiter = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            entered.signal()
            await wakeup.waitIgnoringCancellation()
            returned.value.store(true, ordering: .releasing)
        }
        await entered.wait(for: nil)
        // A cancellable wait in that task would have returned already; give it every chance.
        for _ in 0..<1_000 { await Task.yield() }
        let early = returned.value.load(ordering: .acquiring)
        #expect(!early, "the wait returned without a signal")
        wakeup.signal()
        await waiter.value
        let late = returned.value.load(ordering: .acquiring)
        #expect(late)
    }
}

/// Set once by the waiting task.
final class ReturnFlag: Sendable {
    let value = Atomic<Bool>(false)
}
