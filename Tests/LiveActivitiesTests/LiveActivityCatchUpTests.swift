import APNs
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Testing

@testable import LiveActivities

/// An update accepted before the app reported its activity, with the report arriving before the
/// update's own job ran: the report's catch-up job and the update's job both wait, and the
/// instance must get the update once.
@Suite("LiveActivities: an update pending when the app reports")
struct LiveActivityCatchUpTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    @Test(
        "an update accepted before the instance was reported reaches it once, by the report's catch-up job",
        arguments: Backend.allCases
    )
    func once(backend: Backend) async throws {
        try await LiveActivityHarness.with(backend, clock: ManualClock(t)) { stack in
            try await stack.registerPushToStart(String(repeating: "f1", count: 32), at: t)
            let (activity, _) = try await stack.service.create(LiveActivityHarness.request(channel: nil))
            #expect(try await stack.worker.runDueJobs() == 1, "the start")
            let routes = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(2)]))
            )
            #expect(routes.pending == 1)

            let (_, created) = try await stack.service.register(
                LiveActivityInput.Instance(
                    activityID: "ios-1",
                    deviceToken: String(repeating: "f2", count: 32),
                    updateToken: nil,
                    state: .active
                ),
                for: activity.id,
                userID: "u1",
                app: nil
            )
            #expect(created)
            #expect(try await stack.worker.runDueJobs() == 2, "the update's job and the report's catch-up job")
            let updates = try await stack.store.deliveries(of: activity.id).filter { $0.event == "update" }
            #expect(updates.count == 1, "\(updates)")
            #expect(updates.first?.route == .silent)
            #expect(updates.first?.status == 200)

            // A later update goes by the update's own job, once.
            _ = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(3)]))
            )
            #expect(try await stack.worker.runDueJobs() == 1)
            #expect(try await stack.store.deliveries(of: activity.id).filter { $0.event == "update" }.count == 2)
        }
    }
}
