import APNs
import APNsTestSupport
import DatabaseTestSupport
import Foundation
import HeraldCore
import Jobs
import Testing

@testable import LiveActivities

/// The silent-push fallback, rounded off: an instance reported first without any token gets the
/// latest update once a report brings one, and the silent push carries the update's alert.
@Suite("LiveActivities: the silent fallback")
struct LiveActivityFallbackTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    private func appStarted(_ stack: LiveActivityHarness) async throws -> LiveActivity {
        var request = LiveActivityHarness.request(channel: nil)
        request.start = .app
        return try await stack.service.create(request).0
    }

    private func report(
        _ stack: LiveActivityHarness,
        _ activity: LiveActivity,
        device: String?
    ) async throws -> Bool {
        try await stack.service.register(
            LiveActivityInput.Instance(activityID: "ios-0", deviceToken: device, updateToken: nil, state: .active),
            for: activity.id,
            userID: "u1",
            app: nil
        ).created
    }

    @Test(
        "an instance first reported without a token gets the pending update once a report brings one, once",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func laterToken(backend: Backend) async throws {
        try await LiveActivityHarness.inMemory(backend, clock: ManualClock(t), retryPolicy: .never) { stack in
            let activity = try await appStarted(stack)
            let routes = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(2)]))
            )
            #expect(routes.pending == 1)
            #expect(try await stack.worker.runDueJobs() == 1)
            #expect(try await report(stack, activity, device: nil), "reported, with nowhere to send to")
            _ = try await stack.worker.runDueJobs()
            #expect(stack.apns.requests.isEmpty)

            let device = String(repeating: "d4", count: 32)
            #expect(try await !report(stack, activity, device: device))
            #expect(try await stack.worker.runDueJobs() == 1)
            let sent = stack.apns.requests(to: device)
            #expect(sent.count == 1)
            #expect(sent.first?.payload?["live-activity"]?["content-state"] == .object(["step": .integer(2)]))

            // Reporting the same token again sends nothing more: it received the latest.
            _ = try await report(stack, activity, device: device)
            _ = try await stack.worker.runDueJobs()
            #expect(stack.apns.requests(to: device).count == 1)
        }
    }

    @Test("the silent push carries the update's alert inside live-activity; none without one")
    func alertInside() async throws {
        try await LiveActivityHarness.inMemory(.sqliteMemory, clock: ManualClock(t), retryPolicy: .never) { stack in
            let activity = try await appStarted(stack)
            let device = String(repeating: "d5", count: 32)
            _ = try await report(stack, activity, device: device)
            _ = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(
                    event: .update,
                    contentState: .object(["step": .integer(2)]),
                    alert: LiveActivityAlert(title: "Signed", body: "Your loan is signed")
                )
            )
            _ = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(3)]))
            )
            _ = try await stack.worker.runDueJobs()
            let payloads = stack.apns.requests(to: device).compactMap { $0.payload?["live-activity"] }
            let withAlert = payloads.first { $0["content-state"] == .object(["step": .integer(2)]) }
            #expect(withAlert?["alert"] == .object(["title": "Signed", "body": "Your loan is signed"]))
            let without = payloads.first { $0["content-state"] == .object(["step": .integer(3)]) }
            #expect(without != nil)
            #expect(without?["alert"] == nil)
            #expect(stack.apns.requests(to: device).allSatisfy { $0.pushType == "background" })
        }
    }
}
