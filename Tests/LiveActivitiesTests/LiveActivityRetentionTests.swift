import APNs
import APNsTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Storage
import Testing

@testable import LiveActivities

/// `HERALD_LIVE_ACTIVITY_RETENTION_DAYS`: finished activities (ended, cancelled, failed, expired)
/// are deleted with their instances, users and deliveries once the retention has passed since
/// their last change; running ones and recently finished ones stay.
@Suite("LiveActivities: retention of finished activities")
struct LiveActivityRetentionTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)
    let day: TimeInterval = 86_400

    @Test(
        "an ended and a cancelled activity go after the retention, with their rows; running and recent ones stay",
        arguments: Backend.allCases
    )
    func prunes(backend: Backend) async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(backend, clock: clock, retryPolicy: .never) { stack in
            var appStarted = LiveActivityHarness.request(channel: nil)
            appStarted.start = .app
            // Ended, with an instance and a delivery.
            let (ended, _) = try await stack.service.create(appStarted)
            try await stack.report(
                ended,
                "ios-0",
                device: String(repeating: "d1", count: 32),
                update: String(repeating: "e1", count: 32)
            )
            _ = try await stack.service.end(
                ended.id,
                LiveActivityUpdate(event: .end, contentState: .object(["step": .integer(9)])),
                hasContent: true
            )
            #expect(try await stack.worker.runDueJobs() == 1, "the end's send")
            #expect(try await stack.store.deliveries(of: ended.id).count == 1)
            // Cancelled before its start.
            var scheduled = LiveActivityHarness.request(channel: nil)
            scheduled.startAt = Int64(t.timeIntervalSince1970) + 3_600
            try await stack.registerPushToStart(String(repeating: "a0", count: 32), at: t)
            let (cancelled, _) = try await stack.service.create(scheduled)
            _ = try await stack.service.cancel(cancelled.id)
            // Still running.
            let (running, _) = try await stack.service.create(appStarted)

            let retention = LiveActivityRetention(store: stack.store, retention: 30 * day, channelRetention: 3_600)
            #expect(try await retention.prune(now: clock.now().addingTimeInterval(29 * day)) == 0, "not yet")
            // Finished after the others: kept for its own 30 days.
            clock.advance(10 * day)
            let (recent, _) = try await stack.service.create(appStarted)
            _ = try await stack.service.end(
                recent.id,
                LiveActivityUpdate(event: .end, contentState: .object(["step": .integer(9)])),
                hasContent: true
            )

            #expect(try await retention.prune(now: t.addingTimeInterval(31 * day)) == 2)
            #expect(try await stack.store.activity(ended.id) == nil)
            #expect(try await stack.store.activity(cancelled.id) == nil)
            #expect(try await stack.store.instances(of: ended.id).isEmpty)
            #expect(try await stack.store.deliveries(of: ended.id).isEmpty)
            #expect(try await stack.store.activity(running.id)?.state == .started)
            #expect(try await stack.store.activity(recent.id)?.state == .ended)
            let users = try await stack.store.database.query(
                "SELECT live_activity_id FROM live_activity_users WHERE live_activity_id IN ($1, $2)",
                [.text(LiveActivityID.text(ended.id)), .text(LiveActivityID.text(cancelled.id))]
            )
            #expect(users.isEmpty, "their users are deleted with them")
        }
    }

    @Test("an activity is kept at least a day past its channel's retention, whatever the retention")
    func channelRetentionFirst() async throws {
        let clock = ManualClock(t)
        try await LiveActivityHarness.inMemory(.sqliteMemory, clock: clock, retryPolicy: .never) { stack in
            var appStarted = LiveActivityHarness.request(channel: nil)
            appStarted.start = .app
            let (activity, _) = try await stack.service.create(appStarted)
            _ = try await stack.service.end(
                activity.id,
                LiveActivityUpdate(event: .end, contentState: .object(["step": .integer(9)])),
                hasContent: true
            )
            let retention = LiveActivityRetention(store: stack.store, retention: day, channelRetention: 7 * day)
            #expect(try await retention.prune(now: t.addingTimeInterval(7 * day)) == 0)
            #expect(try await retention.prune(now: t.addingTimeInterval(8 * day + 1)) == 1)
        }
    }
}
