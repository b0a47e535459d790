import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Storage
import Testing

@testable import Wake

/// Once per occurrence across instances sharing PostgreSQL, and across a restart; stale jobs of
/// a changed or deleted schedule end without sending.
@Suite("Wake schedules: durable, once per occurrence")
struct WakeDurabilityTests {
    static func pendingWakeJobs(_ instance: WakeInstance) async throws -> Int {
        try await instance.queue.list(statuses: [.pending], kind: WakeRunner.jobKind).count
    }

    @Test("two instances on PostgreSQL run each occurrence once, and a restarted instance carries the schedule on")
    func twoInstancesAndARestart() async throws {
        // No floor, so that a second run of an occurrence would show as a second push.
        try await WakeHarness.with(.postgres, minimumInterval: 0) { harness in
            let tokens = WakeHarness.tokens(3)
            try await harness.register(tokens)
            let a = harness.instance
            let b = WakeInstance(
                database: harness.database,
                clients: harness.clients,
                clock: harness.clock,
                owner: "instance-b",
                minimumInterval: 0,
                publisher: nil
            )
            let schedule = try await a.create([
                "name": "each minute", "mode": "apns", "every": "1m", "audience": ["all": true],
            ])
            harness.clock.advance(60)
            async let ranA = a.worker.runDueJobs()
            async let ranB = b.worker.runDueJobs()
            #expect(try await ranA + ranB == 1)
            #expect(harness.delivered() == Dictionary(uniqueKeysWithValues: tokens.map { ($0, 1) }))
            #expect(try await Self.pendingWakeJobs(a) == 1, "exactly one next occurrence")

            // The same job run again (a lost lease's second attempt, say) sends nothing more.
            let done = try #require(try await a.queue.list(statuses: [.done], kind: WakeRunner.jobKind).first)
            #expect(try await b.runner.run(done) == .done)
            #expect(harness.delivered().values.allSatisfy { $0 == 1 })
            #expect(try await Self.pendingWakeJobs(a) == 1)

            // A restart: instance a is gone; a new one (new queue, runner, worker) on the same database.
            let restarted = WakeInstance(
                database: harness.database,
                clients: harness.clients,
                clock: harness.clock,
                owner: "instance-a-2",
                minimumInterval: 0,
                publisher: nil
            )
            harness.clock.advance(60)
            async let ranC = restarted.worker.runDueJobs()
            async let ranD = b.worker.runDueJobs()
            #expect(try await ranC + ranD == 1)
            #expect(harness.delivered() == Dictionary(uniqueKeysWithValues: tokens.map { ($0, 2) }))
            let runs = try await restarted.store.runs(scheduleID: schedule.id)
            let start = try #require(schedule.nextRunAt)
            #expect(runs.map(\.occurrenceAt) == [start.addingTimeInterval(60), start])
            #expect(runs.allSatisfy { $0.status == .done && $0.sent == 3 })
        }
    }

    @Test(
        "PATCH retimes and pauses; DELETE ends the chain: stale jobs end unsent",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func patchAndDelete(_ backend: Backend) async throws {
        try await WakeHarness.with(backend, minimumInterval: 0) { harness in
            try await harness.register(WakeHarness.tokens(2))
            let instance = harness.instance
            let schedule = try await instance.create([
                "name": "retimed", "mode": "apns", "every": "1m", "audience": ["all": true],
            ])
            var patch = WakeSchedulePatch()
            patch.every = 600
            let retimed = try await instance.service.update(id: schedule.id, patch)
            #expect(retimed.nextRunAt == harness.clock.now().addingTimeInterval(600))
            harness.clock.advance(60)
            #expect(try await instance.worker.runDueJobs() == 1, "the old timing's job runs")
            #expect(harness.delivered().isEmpty, "and ends without sending")
            #expect(try await Self.pendingWakeJobs(instance) == 1)

            patch = WakeSchedulePatch()
            patch.paused = true
            let paused = try await instance.service.update(id: schedule.id, patch)
            #expect(paused.nextRunAt == nil)
            harness.clock.advance(600)
            _ = try await instance.worker.runDueJobs()
            #expect(harness.delivered().isEmpty, "a paused schedule sends nothing")

            patch.paused = false
            let resumed = try await instance.service.update(id: schedule.id, patch)
            #expect(resumed.nextRunAt == harness.clock.now().addingTimeInterval(600))
            try await instance.service.delete(id: schedule.id)
            harness.clock.advance(600)
            #expect(try await instance.worker.runDueJobs() == 1)
            #expect(harness.delivered().isEmpty, "a deleted schedule sends nothing")
            #expect(try await Self.pendingWakeJobs(instance) == 0, "and its chain ends")
        }
    }

    @Test(
        "an occurrence due while the previous run still sends waits for it",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func noOverlap(_ backend: Backend) async throws {
        try await WakeHarness.with(backend, minimumInterval: 0) { harness in
            try await harness.register(WakeHarness.tokens(2))
            let instance = harness.instance
            let schedule = try await instance.create([
                "name": "overlap", "mode": "apns", "every": "1m", "audience": ["all": true],
            ])
            // An earlier occurrence's run, still sending (on another instance, say).
            let earlier = harness.clock.now()
            _ = try await harness.database.execute(
                "INSERT INTO wake_runs (schedule_id, occurrence_at, mode, status, started_at) VALUES ($1, $2, 'apns', 'running', $2)",
                [SQLValue(schedule.id), SQLValue(earlier)]
            )
            harness.clock.advance(60)
            #expect(try await instance.worker.runDueJobs() == 1)
            #expect(harness.delivered().isEmpty, "postponed while the earlier run sends")
            #expect(try await instance.store.runs(scheduleID: schedule.id).count == 1)
            _ = try await harness.database.execute(
                "UPDATE wake_runs SET status = 'done' WHERE schedule_id = $1",
                [SQLValue(schedule.id)]
            )
            harness.clock.advance(WakeRunner.overlapRecheck)
            #expect(try await instance.worker.runDueJobs() == 1)
            #expect(harness.delivered().count == 2, "then it runs")
            #expect(try await instance.store.runs(scheduleID: schedule.id).count == 2)
        }
    }
}
