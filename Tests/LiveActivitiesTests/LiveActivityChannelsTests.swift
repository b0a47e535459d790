import APNs
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
            clock.advance(harness.sender.channelRetention)
            try await harness.worker.runDueJobs()
            #expect(try await management.allChannels(bundleID: LiveActivityHarness.topic).isEmpty)
            #expect(harness.clients.pools.count == 2)
        }
    }
}
