import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import JobsTestSupport
import Storage
import Testing

/// Recurring jobs: the next occurrence is added with the completion of the current one.
@Suite("Recurring jobs")
struct RecurringJobTests {
    static func handlers(_ calls: CallLog) -> JobHandlers {
        var handlers = JobHandlers()
        handlers.register("ping") { job in
            calls.record(job)
            return .done
        }
        return handlers
    }

    /// The single pending job of the chain.
    static func pending(_ queue: JobQueue) async throws -> Job {
        let pending = try await queue.list(statuses: [.pending])
        try #require(pending.count == 1)
        return pending[0]
    }

    @Test("an interval job schedules its next run when it completes", arguments: Backend.allCases)
    func interval(backend: Backend) async throws {
        let calls = CallLog()
        try await withQueue(backend, handlers: Self.handlers(calls)) { queue, worker, clock, _ in
            let start = clock.now()
            let first = try await queue.enqueue(
                NewJob(kind: "ping", dueAt: start, uniqueKey: "wake-ping", schedule: try .every(seconds: 300))
            )
            #expect(try await worker.runDueJobs() == 1)
            let second = try await Self.pending(queue)
            #expect(second.dueAt == start.addingTimeInterval(300))
            #expect(second.uniqueKey == "wake-ping")
            #expect(second.schedule == .interval(seconds: 300))
            #expect(try await queue.job(id: first.job.id)?.status == .done)

            clock.advance(299)
            #expect(try await worker.runDueJobs() == 0)
            clock.advance(1.5)
            #expect(try await worker.runDueJobs() == 1)
            #expect(try await Self.pending(queue).dueAt == start.addingTimeInterval(600))
            #expect(calls.total == 2)
            // The chain keeps its unique key: scheduling it again is a no-op.
            let duplicate = try await queue.enqueue(NewJob(kind: "ping", uniqueKey: "wake-ping"))
            #expect(!duplicate.inserted)
        }
    }

    @Test(
        "a recurring job whose last attempt dies with its instance (lease expired) keeps its schedule",
        arguments: Backend.allCases
    )
    func chainSurvivesLeaseExpiry(backend: Backend) async throws {
        try await withQueue(backend) { queue, _, clock, _ in
            let start = clock.now()
            let first = try await queue.enqueue(
                NewJob(
                    kind: "ping",
                    dueAt: start,
                    maxAttempts: 1,
                    uniqueKey: "wake-ping",
                    schedule: try .every(seconds: 300)
                )
            )
            _ = try #require(try await queue.claim(owner: "crashed", limit: 1, lease: 30).first)
            clock.advance(31)
            #expect(try await queue.recoverExpiredLeases() == 1)

            let dead = try #require(try await queue.job(id: first.job.id))
            #expect(dead.status == .dead)
            #expect(dead.lastError?.contains("lease expired") == true)
            let next = try await Self.pending(queue)
            #expect(next.dueAt == start.addingTimeInterval(300))
            #expect(next.schedule == .interval(seconds: 300))
            #expect(next.uniqueKey == "wake-ping")
            #expect(next.attempts == 0)
            #expect(try await queue.recoverExpiredLeases() == 0, "recovery runs once per expired lease")
            #expect(try await queue.list(statuses: [.pending]).count == 1)
        }
    }

    @Test("missed runs: run_once runs one catch-up and keeps the phase", arguments: Backend.allCases)
    func missedRunOnce(backend: Backend) async throws {
        let calls = CallLog()
        try await withQueue(backend, handlers: Self.handlers(calls)) { queue, worker, clock, _ in
            let start = clock.now()
            try await queue.enqueue(
                NewJob(kind: "ping", dueAt: start, schedule: try .every(seconds: 3_600), missedRuns: .runOnce)
            )
            clock.advance(5 * 3_600 + 120)  // everything was down for five hours
            #expect(try await worker.runDueJobs() == 1)
            #expect(calls.total == 1)
            #expect(try await Self.pending(queue).dueAt == start.addingTimeInterval(6 * 3_600))
        }
    }

    @Test("missed runs: skip does not run the missed occurrence", arguments: Backend.allCases)
    func missedSkip(backend: Backend) async throws {
        let calls = CallLog()
        try await withQueue(backend, handlers: Self.handlers(calls)) { queue, worker, clock, _ in
            let start = clock.now()
            let missed = try await queue.enqueue(
                NewJob(kind: "ping", dueAt: start, schedule: try .every(seconds: 3_600), missedRuns: .skip)
            )
            clock.advance(5 * 3_600 + 120)
            #expect(try await worker.runDueJobs() == 1)
            #expect(calls.total == 0)
            let skipped = try #require(try await queue.job(id: missed.job.id))
            #expect(skipped.status == .cancelled)
            #expect(skipped.lastError?.hasPrefix("skipped") == true)
            let next = try await Self.pending(queue)
            #expect(next.dueAt == start.addingTimeInterval(6 * 3_600))
            clock.set(next.dueAt)
            #expect(try await worker.runDueJobs() == 1)
            #expect(calls.total == 1)
        }
    }

    @Test("cron in Europe/Berlin across the spring DST change", arguments: Backend.allCases)
    func cronAcrossDST(backend: Backend) async throws {
        let calls = CallLog()
        // 2026-03-28 02:30 CET = 01:30 UTC; the clocks go forward on 2026-03-29 at 02:00 → 03:00.
        let clock = ManualClock(try #require(RFC3339.date(from: "2026-03-28T01:30:00Z")))
        try await withQueue(backend, handlers: Self.handlers(calls), clock: clock) { queue, worker, clock, _ in
            let schedule = try RecurrenceSchedule.cron("30 2 * * *", timeZone: "Europe/Berlin")
            try await queue.enqueue(NewJob(kind: "ping", dueAt: clock.now(), schedule: schedule))
            var due: [String] = []
            for _ in 0..<3 {
                #expect(try await worker.runDueJobs() == 1)
                let next = try await Self.pending(queue)
                due.append(RFC3339.string(from: next.dueAt))
                clock.set(next.dueAt)
            }
            // 02:30 does not exist on 29 March: it runs at 03:00 CEST, then 02:30 CEST again.
            #expect(due == ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"])
            #expect(calls.total == 3)
        }
    }

    @Test("cron in Europe/Berlin across the autumn DST change runs once", arguments: [Backend.sqliteMemory])
    func cronAutumn(backend: Backend) async throws {
        let calls = CallLog()
        // 2026-10-24 02:30 CEST = 00:30 UTC; on 25 October 02:00-03:00 happens twice.
        let clock = ManualClock(try #require(RFC3339.date(from: "2026-10-24T00:30:00Z")))
        try await withQueue(backend, handlers: Self.handlers(calls), clock: clock) { queue, worker, clock, _ in
            let schedule = try RecurrenceSchedule.cron("30 2 * * *", timeZone: "Europe/Berlin")
            try await queue.enqueue(NewJob(kind: "ping", dueAt: clock.now(), schedule: schedule))
            var due: [String] = []
            for _ in 0..<2 {
                #expect(try await worker.runDueJobs() == 1)
                let next = try await Self.pending(queue)
                due.append(RFC3339.string(from: next.dueAt))
                clock.set(next.dueAt)
            }
            #expect(due == ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"])
        }
    }

    @Test("schedules round-trip through their stored JSON and bad ones are refused")
    func scheduleJSON() throws {
        let cron = try RecurrenceSchedule.cron("*/15 9-17 * * MON-FRI", timeZone: "America/New_York")
        #expect(try RecurrenceSchedule(jsonText: cron.jsonText) == cron)
        let interval = try RecurrenceSchedule.every(seconds: 90)
        #expect(interval.jsonText == #"{"every_seconds":90}"#)
        #expect(try RecurrenceSchedule(jsonText: interval.jsonText) == interval)
        #expect(throws: ScheduleError.self) { try RecurrenceSchedule.every(seconds: 0) }
        #expect(throws: ScheduleError.self) { try RecurrenceSchedule.cron("0 9 * * *", timeZone: "Mars/Olympus") }
        #expect(throws: ScheduleError.self) { try RecurrenceSchedule(jsonText: #"{"weekly":true}"#) }
        #expect(try RecurrenceSchedule(jsonText: #"{"every_seconds":90.0}"#) == interval)
        #expect(
            try RecurrenceSchedule(jsonText: #"{"cron":"*/15 9-17 * * MON-FRI"}"#)
                == RecurrenceSchedule.cron("*/15 9-17 * * MON-FRI", timeZone: nil)
        )
        for text in ["[90]", "", #"{"every_seconds":90,}"#, #"{"every_seconds":"90"}"#, #"{"every_seconds":1e30}"#] {
            #expect(throws: ScheduleError.self, "\(text)") { try RecurrenceSchedule(jsonText: text) }
        }
    }
}
