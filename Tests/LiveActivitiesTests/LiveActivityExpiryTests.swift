import APNs
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Testing

@testable import LiveActivities

/// The 8-hour expiry on every backend, with the Live Activities jobs on a queue whose clock the
/// test moves, and the push-to-starts sent over HTTP/2 + TLS to an in-process simulator.
@Suite("LiveActivities: the 8-hour expiry on every backend")
struct LiveActivityExpiryTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    @Test(
        "an activity started at T is expired once the queue's clock passes T + 8 h and its channel deleted after the retention; one ended before stays ended",
        arguments: Backend.allCases
    )
    func expiry(backend: Backend) async throws {
        let clock = ManualClock(t)
        let channels = RecordingChannels()
        try await LiveActivityHarness.with(backend, clock: clock, channels: { _ in channels }) { stack in
            try await stack.registerPushToStart(String(repeating: "e1", count: 32), at: t)
            let (running, _) = try await stack.service.create(
                LiveActivityHarness.request(channel: .create(storagePolicy: 0))
            )
            let (ended, _) = try await stack.service.create(LiveActivityHarness.request(channel: nil))
            let channel = try #require(running.channelID)
            #expect(try await stack.worker.runDueJobs() == 2)
            for id in [running.id, ended.id] {
                let started = try #require(try await stack.store.activity(id))
                #expect(started.state == .started, "\(started.failureReason ?? "")")
                #expect(started.startedAt == t)
            }

            // The second one ends an hour later, long before the expiry.
            clock.advance(3_600)
            _ = try await stack.service.end(
                ended.id,
                LiveActivityUpdate(event: .end, contentState: .object(["step": .integer(2)])),
                hasContent: true
            )
            try await stack.worker.runDueJobs()
            #expect(try await stack.store.activity(ended.id)?.state == .ended)

            // One second before T + 8 h nothing expires; at T + 8 h the running one does.
            clock.set(t.addingTimeInterval(LiveActivityLimits.maximumActivityDuration - 1))
            try await stack.worker.runDueJobs()
            #expect(try await stack.store.activity(running.id)?.state == .started)
            clock.set(t.addingTimeInterval(LiveActivityLimits.maximumActivityDuration))
            #expect(try await stack.worker.runDueJobs() == 2, "both activities' expiry jobs")
            let expired = try #require(try await stack.store.activity(running.id))
            #expect(expired.state == .expired)
            #expect(expired.endedAt == t.addingTimeInterval(LiveActivityLimits.maximumActivityDuration))
            let stayed = try #require(try await stack.store.activity(ended.id))
            #expect(stayed.state == .ended)
            #expect(stayed.endedAt == t.addingTimeInterval(3_600))

            // The created channel's deletion is due when the retention has passed after the expiry.
            let deletions = try await stack.queue.list(statuses: [.pending], kind: LiveActivityJobKind.deleteChannel)
            #expect(deletions.count == 1)
            #expect(
                deletions.first?.dueAt == t.addingTimeInterval(LiveActivityLimits.maximumActivityDuration + 3_600)
            )
            #expect(try LiveActivityJob(try #require(deletions.first)).id == running.id)
            try await stack.worker.runDueJobs()
            #expect(channels.deleted.isEmpty)
            clock.advance(3_600)
            #expect(try await stack.worker.runDueJobs() == 1)
            #expect(channels.deleted == [channel])
            #expect(try await stack.store.activity(running.id)?.state == .expired)
        }
    }
}
