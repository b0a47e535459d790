import APNs
import APNsSimulator
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Storage
import Testing

@testable import LiveActivities

/// A push-to-start that APNs takes for some of the user's devices and not (yet) for others.
@Suite("LiveActivities: push-to-start retried for the tokens APNs did not take")
struct LiveActivityStartRetryTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)
    let first = String(repeating: "a1", count: 32)
    let second = String(repeating: "b2", count: 32)

    @Test(
        "the activity starts with the token APNs took; the other gets the latest content later, once, by a job of its own",
        arguments: Backend.allCases
    )
    func partial(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.with(backend, clock: clock) { stack in
            let activity = try await startWithSecondRefused(stack)
            #expect(try await stack.store.activity(activity.id)?.state == .started)
            let starts = try await stack.store.deliveries(of: activity.id).filter { $0.event == "start" }
            #expect(starts.map(\.status).sorted { ($0 ?? 0) < ($1 ?? 0) } == [200, 503], "\(starts)")

            // APNs is back; an update is accepted meanwhile (no instance yet: pending).
            stack.simulator.removeAllFaults()
            let routes = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(2)]))
            )
            #expect(routes.pending == 1)
            #expect(try await stack.worker.runDueJobs() == 1, "the update's job; the rest waits for its backoff")

            clock.advance(600)
            #expect(try await stack.worker.runDueJobs() == 1, "the push-to-start for the token APNs did not take")
            let pushes = stack.simulator.deliveries().filter { $0.pushType == "liveactivity" && $0.isDelivered }
            #expect(pushes.filter { $0.token == first }.count == 1, "the first token is not sent it again")
            let late = try #require(pushes.first { $0.token == second })
            let aps = late.payloadJSON?["aps"]
            #expect(aps?["event"] == .string("start"))
            #expect(aps?["content-state"] == .object(["step": .integer(2)]), "the latest content, not the first")
            let timestamps = pushes.compactMap { $0.payloadJSON?["aps"]?["timestamp"] }
            #expect(Set(timestamps).count == timestamps.count, "each push-to-start has a timestamp of its own")

            clock.advance(3_600)
            #expect(try await stack.worker.runDueJobs() == 0, "nothing more to send")
            let after = try await stack.store.deliveries(of: activity.id).filter { $0.event == "start" }
            #expect(after.count == 3)
            #expect(after.filter { $0.status == 200 }.count == 2)
        }
    }

    @Test(
        "a token's push-to-start waiting for APNs is not sent once the activity ended",
        arguments: [Backend.sqliteMemory]
    )
    func endedMeanwhile(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.with(backend, clock: clock) { stack in
            let activity = try await startWithSecondRefused(stack)
            stack.simulator.removeAllFaults()
            _ = try await stack.service.end(
                activity.id,
                LiveActivityUpdate(event: .end, contentState: .object(["step": .integer(9)])),
                hasContent: true
            )
            #expect(try await stack.worker.runDueJobs() == 1, "the end's job")
            clock.advance(600)
            #expect(try await stack.worker.runDueJobs() == 1, "the rest's job, which finds the activity ended")
            let toSecond = stack.simulator.deliveries().filter { $0.token == second && $0.isDelivered }
            #expect(toSecond.isEmpty, "\(toSecond.map(\.pushType))")
        }
    }

    @Test("a start's timestamp comes after an update accepted since the activity was read", arguments: Backend.allCases)
    func stampAfterUpdate(backend: Backend) async throws {
        try await LiveActivityHarness.with(backend, clock: ManualClock(t)) { stack in
            let activity = try await startWithSecondRefused(stack)
            let stale = try #require(try await stack.store.activity(activity.id))
            _ = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(2)]))
            )
            let latest = try #require(try await stack.store.activity(activity.id)).lastTimestamp
            #expect(latest > stale.lastTimestamp)
            let stamped = try await stack.store.database.transaction { tx in
                try await stack.store.stampStart(stale.id, now: t, on: tx)
            }
            #expect(stamped == latest + 1)
            #expect(try await stack.store.activity(activity.id)?.lastTimestamp == stamped)
        }
    }

    @Test(
        "a cancel while the push-to-starts are out is refused (409 starting); once APNs took none it is taken",
        arguments: Backend.allCases
    )
    func cancelWhileStarting(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.with(backend, clock: clock) { stack in
            try await stack.registerPushToStart(first, at: t)
            _ = stack.simulator.addFault(APNSSimulatorFault(.delay(.seconds(3)), token: first))
            let (activity, _) = try await stack.service.create(LiveActivityHarness.request(channel: nil))
            async let started = stack.worker.runDueJobs()
            // Wait until the job has marked the activity (the push is then held 3 s by the simulator).
            for _ in 0..<200 {
                let row = try await stack.store.database.queryFirst(
                    "SELECT starting FROM live_activities WHERE id = $1",
                    [.text(LiveActivityID.text(activity.id))]
                )
                if try row?.int("starting") == 1 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            await #expect(throws: LiveActivityError.self) { _ = try await stack.service.cancel(activity.id) }
            do {
                _ = try await stack.service.cancel(activity.id)
            } catch let error as LiveActivityError {
                #expect(error.code == "starting")
                #expect(error.kind == .conflict)
            }
            #expect(try await started == 1)
            #expect(try await stack.store.activity(activity.id)?.state == .started)

            // APNs takes none (503): the job retries later, and a cancel in between is taken.
            stack.simulator.removeAllFaults()
            _ = stack.simulator.addFault(APNSSimulatorFault(.respond(status: 503, reason: .serviceUnavailable)))
            let (second, _) = try await stack.service.create(LiveActivityHarness.request(channel: nil))
            #expect(try await stack.worker.runDueJobs() == 1)
            #expect(try await stack.service.cancel(second.id).state == .cancelled)
            stack.simulator.removeAllFaults()
            clock.advance(600)
            #expect(try await stack.worker.runDueJobs() == 1, "the start's retry, which finds it cancelled")
            #expect(try await stack.store.activity(second.id)?.state == .cancelled)
            let sent = stack.simulator.deliveries().filter { $0.isDelivered && $0.pushType == "liveactivity" }
            #expect(sent.count == 1, "only the first activity's push-to-start")
        }
    }

    @Test("a start APNs takes for no token in all 20 attempts fails the activity", arguments: Backend.allCases)
    func lastAttempt(backend: Backend) async throws {
        let clock = ManualClock(t)
        // The client does not retry on its own: each of the job's attempts is one push.
        try await LiveActivityHarness.with(backend, clock: clock, retryPolicy: .never) { stack in
            try await stack.registerPushToStart(first, at: t)
            _ = stack.simulator.addFault(APNSSimulatorFault(.respond(status: 503, reason: .serviceUnavailable)))
            let (activity, _) = try await stack.service.create(LiveActivityHarness.request(channel: nil))
            for attempt in 1...20 {
                #expect(try await stack.worker.runDueJobs() == 1, "attempt \(attempt)")
                let state = try await stack.store.activity(activity.id)?.state
                #expect(state == (attempt < 20 ? .scheduled : .failed), "after attempt \(attempt)")
                clock.advance(400)
            }
            let failed = try #require(try await stack.store.activity(activity.id))
            #expect(failed.failureReason == "APNs accepted no push-to-start in 20 attempts")
            #expect(try await stack.worker.runDueJobs() == 0, "nothing left to try")
            #expect(try await stack.store.deliveries(of: activity.id).filter { $0.status == 503 }.count == 20)
        }
    }

    /// Starts an activity for `u1`, whose two push-to-start tokens APNs answers with 200 (the
    /// first) and 503 (the second, until the faults are removed).
    func startWithSecondRefused(_ stack: LiveActivityHarness) async throws -> LiveActivity {
        try await stack.registerPushToStart(first, at: t)
        try await stack.registerPushToStart(second, at: t)
        _ = stack.simulator.addFault(
            APNSSimulatorFault(.respond(status: 503, reason: .serviceUnavailable), token: second)
        )
        let (activity, _) = try await stack.service.create(LiveActivityHarness.request(channel: nil))
        #expect(try await stack.worker.runDueJobs() == 1, "the start")
        return activity
    }
}
