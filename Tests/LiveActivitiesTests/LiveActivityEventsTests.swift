import APNs
import APNsTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Testing

@testable import LiveActivities

/// The activities' started, ended and failed events (the `live_activity.*` webhooks), each
/// reported once, in the transaction of the change.
@Suite("LiveActivities: started, ended and failed events")
struct LiveActivityEventsTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    private func kinds(_ stack: LiveActivityHarness, _ id: UUID) -> [LiveActivityEvent.Kind] {
        stack.events.all.filter { $0.id == id }.map(\.kind)
    }

    @Test(
        "a push start that APNs took is started; the API's end is ended api; 8 hours on nothing more",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func startedAndEnded(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(backend, clock: clock, retryPolicy: .never) { stack in
            try await stack.registerPushToStart(String(repeating: "a0", count: 32), at: t)
            let (activity, _) = try await stack.service.create(LiveActivityHarness.request(channel: nil))
            #expect(kinds(stack, activity.id).isEmpty, "nothing before APNs took the start")
            #expect(try await stack.worker.runDueJobs() == 1)
            #expect(kinds(stack, activity.id) == [.started])
            let started = try #require(stack.events.all.first)
            #expect(started.app == LiveActivityHarness.topic)
            #expect(started.environment == .production)
            #expect(started.attributesType == "LoanAttributes")
            #expect(started.at == t)
            _ = try await stack.service.end(
                activity.id,
                LiveActivityUpdate(event: .end, contentState: .object(["step": .integer(9)])),
                hasContent: true
            )
            #expect(kinds(stack, activity.id) == [.started, .ended(.api)])
            clock.advance(LiveActivityLimits.maximumActivityDuration)
            _ = try await stack.worker.runDueJobs()
            #expect(kinds(stack, activity.id) == [.started, .ended(.api)], "an ended activity does not expire")
            #expect(stack.events.commits >= 2)
        }
    }

    @Test("end_at ends with reason end_at; an activity still running 8 hours on is ended expired")
    func scheduledEndAndExpiry() async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(.sqliteMemory, clock: clock, retryPolicy: .never) { stack in
            var ending = LiveActivityHarness.request(channel: nil)
            ending.start = .app
            ending.endAt = Int64(t.timeIntervalSince1970) + 600
            let (scheduled, _) = try await stack.service.create(ending)
            var running = LiveActivityHarness.request(channel: nil)
            running.start = .app
            let (expiring, _) = try await stack.service.create(running)
            #expect(kinds(stack, scheduled.id) == [.started], "an activity the app starts is started at once")
            clock.advance(600)
            _ = try await stack.worker.runDueJobs()
            #expect(kinds(stack, scheduled.id) == [.started, .ended(.endAt)])
            clock.advance(LiveActivityLimits.maximumActivityDuration)
            _ = try await stack.worker.runDueJobs()
            #expect(kinds(stack, expiring.id) == [.started, .ended(.expired)])
            #expect(kinds(stack, scheduled.id) == [.started, .ended(.endAt)])
        }
    }

    @Test("an audience without push-to-start tokens at start_at fails, with the reason the activity shows")
    func failed() async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(.sqliteMemory, clock: clock, retryPolicy: .never) { stack in
            let token = String(repeating: "a1", count: 32)
            try await stack.registerPushToStart(token, at: t)
            var request = LiveActivityHarness.request(channel: nil)
            request.startAt = Int64(t.timeIntervalSince1970) + 60
            let (activity, _) = try await stack.service.create(request)
            // The token goes before start_at: APNs called it dead.
            try await stack.store.invalidatePushToStart(
                app: LiveActivityHarness.topic,
                environment: .production,
                attributesType: "LoanAttributes",
                token: token,
                reason: "Unregistered",
                at: t,
                now: t
            )
            clock.advance(60)
            _ = try await stack.worker.runDueJobs()
            let stored = try await stack.store.activity(activity.id)
            #expect(stored?.state == .failed)
            #expect(kinds(stack, activity.id) == [.failed(reason: try #require(stored?.failureReason))])
        }
    }
}
