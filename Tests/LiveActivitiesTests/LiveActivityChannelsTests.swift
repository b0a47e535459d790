import APNs
import APNsSimulator
import APNsTransport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Notifications
import Testing

@testable import LiveActivities

/// Activities' broadcast channels go through `APNSClientProvider`'s management clients, as
/// `/v1/channels` does: one pool per app and environment for both, closed with the provider.
@Suite("LiveActivities: channels through the APNs client provider")
struct LiveActivityChannelsTests {
    @Test(
        "an activity's channel is created and deleted on the management pool /v1/channels uses",
        arguments: Backend.allCases
    )
    func sharedManagementPool(backend: Backend) async throws {
        let clock = ManualClock()
        try await LiveActivityHarness.with(backend, clock: clock) { harness in
            try await harness.registerPushToStart(String(repeating: "e2", count: 32), at: clock.now())
            #expect(harness.clients.pools.isEmpty)
            let (activity, _) = try await harness.service.create(
                LiveActivityHarness.request(channel: .create(storagePolicy: 0))
            )
            let channel = APNSChannelID(rawValue: try #require(activity.channelID))
            #expect(harness.clients.pools.count == 1, "the provider's management pool made the channel")

            // /v1/channels reads it through the same client, on the same pool.
            let management = try harness.clients.managementClient(for: harness.app, environment: .production)
            #expect(try await management.allChannels(bundleID: LiveActivityHarness.topic) == [channel])
            #expect(harness.clients.pools.count == 1)

            // Started (the push pool opens), ended, and deleted once the retention passed.
            #expect(try await harness.worker.runDueJobs() == 1)
            #expect(try await harness.store.activity(activity.id)?.state == .started)
            #expect(harness.clients.pools.count == 2, "the push pool beside the management one")
            _ = try await harness.service.end(
                activity.id,
                LiveActivityUpdate(event: .end, contentState: .object(["step": .integer(2)])),
                hasContent: true
            )
            try await harness.worker.runDueJobs()
            clock.advance(harness.jobs.parts.channelRetention)
            try await harness.worker.runDueJobs()
            #expect(try await management.allChannels(bundleID: LiveActivityHarness.topic).isEmpty)
            #expect(harness.clients.pools.count == 2)
        }
    }

    @Test(
        "the channel Herald made for an activity that never runs is deleted at once: cancelled, or failed to start",
        arguments: Backend.allCases
    )
    func neverRuns(backend: Backend) async throws {
        let clock = ManualClock()
        try await LiveActivityHarness.with(backend, clock: clock) { harness in
            let token = String(repeating: "e3", count: 32)
            try await harness.registerPushToStart(token, at: clock.now())
            let management = try harness.clients.managementClient(for: harness.app, environment: .production)
            var request = LiveActivityHarness.request(channel: .create(storagePolicy: 0))
            request.startAt = EpochTime.seconds(clock.now()) + 3_600
            let (scheduled, _) = try await harness.service.create(request)
            #expect(try await management.allChannels(bundleID: LiveActivityHarness.topic).count == 1)
            _ = try await harness.service.cancel(scheduled.id)
            #expect(try await harness.worker.runDueJobs() == 1, "the deletion, due at once")
            #expect(try await management.allChannels(bundleID: LiveActivityHarness.topic).isEmpty)

            // APNs calls the only push-to-start token dead: the activity fails, its channel goes.
            _ = harness.simulator.addFault(
                APNSSimulatorFault(.respond(status: 410, reason: .unregistered), token: token)
            )
            let (failing, _) = try await harness.service.create(
                LiveActivityHarness.request(channel: .create(storagePolicy: 0))
            )
            #expect(try await management.allChannels(bundleID: LiveActivityHarness.topic).count == 1)
            #expect(try await harness.worker.runDueJobs() == 2, "the start, then the deletion it made due at once")
            #expect(try await harness.store.activity(failing.id)?.state == .failed)
            #expect(try await management.allChannels(bundleID: LiveActivityHarness.topic).isEmpty)
        }
    }
}
