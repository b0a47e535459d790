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
        try await stack.report(activity, "ios-0", device: device).created
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

/// `expiration` of an update: carried as `apns-expiration` by the broadcasts of a channel Herald
/// created with `storage_policy` 1; refused for any other activity, which APNs would not store.
@Suite("LiveActivities: broadcasts APNs stores")
struct LiveActivityStoredBroadcastTests {
    let t = Date(timeIntervalSince1970: 1_790_000_000)

    private func created(_ stack: LiveActivityHarness, policy: Int) async throws -> LiveActivity {
        var request = LiveActivityHarness.request(channel: .create(storagePolicy: policy))
        request.start = .app
        return try await stack.service.create(request).0
    }

    @Test(
        "storage_policy 1: the update's expiration is the broadcast's apns-expiration, else 0",
        arguments: [Backend.sqliteMemory, .postgres]
    )
    func stored(backend: Backend) async throws {
        try await LiveActivityHarness.inMemory(backend, clock: ManualClock(t), retryPolicy: .never) { stack in
            let activity = try await created(stack, policy: 1)
            let until = Int64(t.timeIntervalSince1970) + 3_600
            _ = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(2)]), expiration: until)
            )
            _ = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(3)]))
            )
            _ = try await stack.service.update(
                activity.id,
                LiveActivityUpdate(event: .update, contentState: .object(["step": .integer(4)]), expiration: 0)
            )
            _ = try await stack.worker.runDueJobs()
            let broadcasts = stack.apns.requests.filter { $0.path.hasPrefix("/4/broadcasts/") }
            #expect(broadcasts.compactMap { $0.header("apns-expiration") }.sorted() == ["0", "0", String(until)])
            #expect(broadcasts.allSatisfy { $0.status == 200 })
        }
    }

    @Test("an expiration for a channel without storage, or for an activity without a channel, is refused naming it")
    func refused() async throws {
        try await LiveActivityHarness.inMemory(.sqliteMemory, clock: ManualClock(t), retryPolicy: .never) { stack in
            var appStarted = LiveActivityHarness.request(channel: nil)
            appStarted.start = .app
            for activity in [try await created(stack, policy: 0), try await stack.service.create(appStarted).0] {
                await #expect {
                    _ = try await stack.service.update(
                        activity.id,
                        LiveActivityUpdate(
                            event: .update,
                            contentState: .object(["step": .integer(2)]),
                            expiration: Int64(t.timeIntervalSince1970) + 60
                        )
                    )
                } throws: { error in
                    (error as? LiveActivityError)?.code == "expiration_not_stored"
                        && (error as? LiveActivityError)?.field == "expiration"
                }
            }
        }
    }
}
